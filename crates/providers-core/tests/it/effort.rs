//! The effort vocabulary and its clamps.

use providers_core::{
    AgyTier, Effort, Error, clamp_agy_effort, clamp_codex_effort, codex_effort_ceiling,
    normalize_effort,
};

#[test]
fn normalisation_ignores_case_and_whitespace() {
    // contract: PRV-030
    for raw in ["high", "High", " HIGH\t", "hIgH\n"] {
        assert_eq!(normalize_effort(raw), Ok(Effort::High), "{raw:?}");
        assert_eq!(raw.parse::<Effort>(), Ok(Effort::High));
    }
    // "High" clamps exactly like "high" on every clamp table.
    let a = normalize_effort("High").unwrap();
    let b = normalize_effort("high").unwrap();
    assert_eq!(
        clamp_codex_effort("gpt-5", a),
        clamp_codex_effort("gpt-5", b)
    );
    assert_eq!(clamp_agy_effort(a, false), clamp_agy_effort(b, false));
    for e in Effort::ALL {
        assert_eq!(normalize_effort(&e.as_str().to_uppercase()), Ok(e));
    }
}

#[test]
fn unknown_effort_is_an_error_not_a_clamp() {
    assert_eq!(
        normalize_effort("extreme"),
        Err(Error::UnknownEffort("extreme".into()))
    );
    assert!(normalize_effort("").is_err());
    assert!(normalize_effort("x-high").is_err());
}

#[test]
fn codex_ceilings_by_model() {
    // contract: PRV-031
    for m in ["gpt-5.6-sol", "gpt-5.6-terra", "openai/gpt-5.6-sol"] {
        assert_eq!(clamp_codex_effort(m, Effort::Ultra), Effort::Ultra, "{m}");
        assert_eq!(clamp_codex_effort(m, Effort::Max), Effort::Max, "{m}");
    }
    assert_eq!(clamp_codex_effort("gpt-5.6-luna", Effort::Max), Effort::Max);
    assert_eq!(
        clamp_codex_effort("gpt-5.6-luna", Effort::Ultra),
        Effort::Max
    );
    for m in [
        "gpt-5",
        "gpt-5-codex",
        "gpt-5.1-codex-max",
        "gpt-5.5",
        "gpt-5-2025-08-07",
        "o3",
    ] {
        assert_eq!(codex_effort_ceiling(m), Some(Effort::XHigh), "{m}");
        assert_eq!(clamp_codex_effort(m, Effort::Ultra), Effort::XHigh);
        assert_eq!(clamp_codex_effort(m, Effort::Max), Effort::XHigh);
        assert_eq!(clamp_codex_effort(m, Effort::High), Effort::High);
    }
}

#[test]
fn unknown_codex_models_pass_through() {
    // contract: PRV-032
    for m in ["gpt-6", "gpt-5.7-nova", "gpt-5.6-sol-preview-x"] {
        assert_eq!(codex_effort_ceiling(m), None, "{m}");
        for e in Effort::ALL {
            assert_eq!(clamp_codex_effort(m, e), e);
        }
    }
}

#[test]
fn agy_clamp_table() {
    // contract: PRV-033, PRV-067
    use Effort as E;
    let expect = [
        (E::None, AgyTier::Low, AgyTier::Low),
        (E::Minimal, AgyTier::Low, AgyTier::Low),
        (E::Low, AgyTier::Low, AgyTier::Low),
        (E::Medium, AgyTier::Medium, AgyTier::High),
        (E::High, AgyTier::High, AgyTier::High),
        (E::XHigh, AgyTier::High, AgyTier::High),
        (E::Max, AgyTier::High, AgyTier::High),
        (E::Ultra, AgyTier::High, AgyTier::High),
    ];
    for (e, with_medium, without) in expect {
        assert_eq!(clamp_agy_effort(e, true), with_medium, "{e}");
        assert_eq!(clamp_agy_effort(e, false), without, "{e} on 3.1 pro");
        assert_ne!(clamp_agy_effort(e, false), AgyTier::Medium);
    }
}

proptest::proptest! {
    #[test]
    fn clamping_never_panics_on_any_model_string(model in ".*", raw in ".*") {
        for e in Effort::ALL {
            let _ = clamp_codex_effort(&model, e);
        }
        let _ = codex_effort_ceiling(&format!("{model}-2025-08-07"));
        let _ = normalize_effort(&raw);
    }
}

#[test]
fn dated_variants_and_multibyte_names() {
    assert_eq!(
        codex_effort_ceiling("gpt-5.6-luna-2026-01-02"),
        Some(Effort::Max)
    );
    assert_eq!(codex_effort_ceiling("éééééé-2025"), None);
    assert_eq!(codex_effort_ceiling("gpt-5-2025-8-07"), None);
}
