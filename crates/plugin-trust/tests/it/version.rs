//! The `lionagi` specifier check.

use plugin_trust::{COMPAT_VERSION, specifier_admits};

#[test]
fn specifiers_match_like_pep_440_release_numbers() {
    let cases = [
        (">=0.9", true),
        (">=1.0", true),
        (">1.0", false),
        ("<2", true),
        ("<1.0", false),
        ("<=1", true),
        ("==1.0.0", true),
        ("==1", true),
        ("==1.*", true),
        ("==0.*", false),
        ("!=1.0", false),
        ("!=0.*", true),
        ("~=1.0", true),
        ("~=0.9", false),
        ("~=1.0.0", true),
        (">=0.9, <2", true),
        (">=0.9,<1", false),
        (" >= 0.9 ", true),
        ("v1.0", false),
        ("", false),
        ("   ", false),
        ("latest", false),
        ("~=1", false),
        (">=1.0rc1", false),
        ("===1.0.0", false),
        (">=1.*", false),
        (">=0.9,", false),
        ("=>1", false),
    ];
    for (spec, admits) in cases {
        assert_eq!(specifier_admits(spec, COMPAT_VERSION), admits, "{spec:?}");
    }
    assert!(specifier_admits("==v1.0", COMPAT_VERSION));
    assert!(!specifier_admits(">=0.9", "not-a-version"));
}
