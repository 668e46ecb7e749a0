//! The effort vocabulary and its normalisation.

use providers_core::{Effort, Error, normalize_effort};

#[test]
fn normalisation_ignores_case_and_whitespace() {
    // contract: PRV-030
    for raw in ["high", "High", " HIGH\t", "hIgH\n"] {
        assert_eq!(normalize_effort(raw), Ok(Effort::High), "{raw:?}");
        assert_eq!(raw.parse::<Effort>(), Ok(Effort::High));
    }
    // The clamp tables themselves are the providers'; each provider's
    // tests check that "High" clamps there exactly like "high".
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

proptest::proptest! {
    #[test]
    fn normalising_never_panics(raw in ".*") {
        let _ = normalize_effort(&raw);
    }
}
