//! The settings-file locator's precedence.

use std::ffi::OsString;
use std::path::PathBuf;

use runtime_settings::{SETTINGS_PATH_VAR, locate_settings_with};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn the_variable_wins_then_home_then_nothing() {
    let both = vars(&[
        (SETTINGS_PATH_VAR, "/etc/lionrt.yaml"),
        ("HOME", "/home/ada"),
    ]);
    assert_eq!(
        locate_settings_with(both),
        Some(PathBuf::from("/etc/lionrt.yaml"))
    );
    let home = vars(&[("HOME", "/home/ada")]);
    assert_eq!(
        locate_settings_with(home),
        Some(PathBuf::from("/home/ada/.lionagi/settings.yaml"))
    );
    let empty_var = vars(&[(SETTINGS_PATH_VAR, ""), ("HOME", "/home/ada")]);
    assert_eq!(
        locate_settings_with(empty_var),
        Some(PathBuf::from("/home/ada/.lionagi/settings.yaml"))
    );
    assert_eq!(locate_settings_with(vars(&[("HOME", "")])), None);
    assert_eq!(locate_settings_with(vars(&[])), None);
}
