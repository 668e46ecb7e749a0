//! Unit tests: the `match` forms agree with the word lists.

use super::{
    BOUNDING_KEYWORDS, DENIED_KEYWORDS, INERT_KEYWORDS, MODELED_KEYWORDS, NUMERIC_BOUND_KEYWORDS,
    WALKER_APPLICATOR_KEYWORDS, WALKER_SCALAR_ONLY_KEYWORDS, classify_by_lists, classify_keyword,
    walker_recognises, walker_recognises_by_lists,
};

#[test]
fn match_forms_agree_with_the_lists() {
    let mut words: Vec<&str> = [
        INERT_KEYWORDS,
        BOUNDING_KEYWORDS,
        MODELED_KEYWORDS,
        DENIED_KEYWORDS,
        WALKER_SCALAR_ONLY_KEYWORDS,
        NUMERIC_BOUND_KEYWORDS,
        WALKER_APPLICATOR_KEYWORDS,
    ]
    .concat();
    words.extend(["Properties", "x-a", "$foo", "minCustomThing", "", "ref"]);
    for w in words {
        assert_eq!(classify_keyword(w), classify_by_lists(w), "{w}");
        assert_eq!(walker_recognises(w), walker_recognises_by_lists(w), "{w}");
    }
}
