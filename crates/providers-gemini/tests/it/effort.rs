//! agy's effort tiers: the one clamp table, the seam's answer, and no MCP
//! set (agy cannot be given one).

use providers_core::{
    AgentRequest, Effort, ForwardedMcp, Provider, apply_forwarded_mcp_servers, normalize_effort,
};
use providers_gemini::{
    AGY_MODELS, AgyTier, GeminiProvider, ModelSource, agy_effort_tier, clamp_agy_effort,
    resolve_agy_model,
};
use serde_json::json;

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

#[test]
fn normalised_levels_clamp_alike() {
    // contract: PRV-030
    let a = normalize_effort("High").unwrap();
    let b = normalize_effort("high").unwrap();
    for has_medium in [true, false] {
        assert_eq!(
            clamp_agy_effort(a, has_medium),
            clamp_agy_effort(b, has_medium)
        );
    }
}

#[test]
fn the_seam_reports_the_tier_the_model_name_gets() {
    let p = GeminiProvider::default();
    for e in Effort::ALL {
        for f in AGY_MODELS {
            for typed in [f.display, f.aliases[0]] {
                let name = resolve_agy_model(Some((typed, ModelSource::Explicit)), Some(e), false)
                    .expect("a known family resolves");
                let tier = agy_effort_tier(Some(typed), e).expect("a known family has tiers");
                assert_eq!(name, format!("{} ({})", f.display, tier.as_str()));
                assert_eq!(p.clamp_effort(Some(typed), e), Some(tier.effort()));
            }
        }
        let default = resolve_agy_model(None, Some(e), false).expect("default family");
        let tier = agy_effort_tier(None, e).expect("default family has tiers");
        assert!(
            default.ends_with(&format!("({})", tier.as_str())),
            "{default}"
        );
        // A concrete display name or an unknown model takes no suffix.
        for bare in ["Gemini 3 Flash (Medium)", "some-other-model"] {
            assert_eq!(
                resolve_agy_model(Some((bare, ModelSource::Explicit)), Some(e), false).as_deref(),
                Some(bare)
            );
            assert_eq!(p.clamp_effort(Some(bare), e), None, "{bare}");
        }
    }
}

#[test]
fn agy_is_never_given_an_mcp_set() {
    // contract: PRV-093
    let p = GeminiProvider::default();
    assert_eq!(p.mcp_forwarding(), None);
    let mut a = AgentRequest::new("p");
    let fwd = ForwardedMcp {
        servers: json!({"fs": {"command": "x"}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        exclusive: true,
    };
    assert!(!apply_forwarded_mcp_servers(&p, &mut a.kwargs, &fwd));
    assert!(a.kwargs.is_empty());
    p.invocation(&a).expect("unchanged kwargs still build");
}
