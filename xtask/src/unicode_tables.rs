//! `cargo xtask unicode-tables`: generates mcp-admission's Unicode tables
//! (`crates/mcp-admission/src/unicode_tables.rs`) from three files of the
//! Unicode Character Database, kept in `fixtures/admission/ucd-14.0.0`.
//!
//! The tables reproduce Python 3.11's string methods, which use UCD 14.0.0:
//!
//! - `CASEFOLD_SPECIAL`: every character whose full case folding (status
//!   `C` or `F` in `CaseFolding.txt`, else the character itself) differs
//!   from its full lowercase mapping (an unconditional `SpecialCasing.txt`
//!   entry, else the simple mapping of `UnicodeData.txt`, else itself).
//! - `NON_PRINTABLE`: the inclusive ranges of code points `str.isprintable`
//!   rejects: general category `Cc`, `Cf`, `Cs`, `Co`, `Zl`, `Zp`, `Zs`
//!   (but U+0020) and every unassigned code point (`Cn`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The UCD files, relative to the workspace root.
pub(crate) const UCD_DIR: &str = "fixtures/admission/ucd-14.0.0";
/// The generated file, relative to the workspace root.
pub(crate) const TABLES_FILE: &str = "crates/mcp-admission/src/unicode_tables.rs";

const HEADER: &str = "//! Unicode data tables generated from the Unicode Character Database (14.0).
//!
//! `CASEFOLD_SPECIAL` lists the characters whose full case folding differs from
//! their lowercase mapping; `NON_PRINTABLE` lists the ranges a Python-style
//! string repr escapes. Both are data, sorted by code point for binary search.
";

/// The tables file's text generated from the UCD files in `ucd`.
pub(crate) fn generate(ucd: &Path) -> Result<String> {
    let read = |name: &str| {
        let path = ucd.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let data = parse_unicode_data(&read("UnicodeData.txt")?)?;
    let special_lower = parse_special_lowercase(&read("SpecialCasing.txt")?)?;
    let folding = parse_case_folding(&read("CaseFolding.txt")?)?;
    Ok(render(&data, &special_lower, &folding))
}

/// `cargo xtask unicode-tables [--check]`: writes the tables, or with
/// `--check` fails when the committed file differs from what the UCD gives.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = crate::workspace_root();
    let text = generate(&root.join(UCD_DIR))?;
    let target = root.join(TABLES_FILE);
    match args {
        [] => {
            std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))
        }
        [flag] if flag == "--check" => {
            let committed = std::fs::read_to_string(&target)
                .with_context(|| format!("reading {}", target.display()))?;
            if committed != text {
                bail!(
                    "{TABLES_FILE} differs from what {UCD_DIR} gives; run cargo xtask unicode-tables"
                );
            }
            Ok(())
        }
        _ => bail!("unicode-tables takes no argument but --check"),
    }
}

/// What `UnicodeData.txt` says of one assigned code point.
struct Assigned {
    category: String,
    lowercase: Option<u32>,
}

fn hex(field: &str) -> Result<u32> {
    u32::from_str_radix(field.trim(), 16).with_context(|| format!("bad code point {field:?}"))
}

fn hex_list(field: &str) -> Result<Vec<u32>> {
    field.split_whitespace().map(hex).collect()
}

/// Data lines: comments and blank lines dropped, fields split on `;`.
fn records(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(|line| line.split(';').map(str::trim).collect())
}

/// Every assigned code point; `<..., First>` / `<..., Last>` pairs cover the
/// range between them.
fn parse_unicode_data(text: &str) -> Result<BTreeMap<u32, Assigned>> {
    let mut out = BTreeMap::new();
    let mut first: Option<(u32, String)> = None;
    for fields in records(text) {
        let [code, name, category, .., lower, _title] = fields.as_slice() else {
            bail!("UnicodeData.txt line with {} fields", fields.len());
        };
        if fields.len() != 15 {
            bail!("UnicodeData.txt line with {} fields", fields.len());
        }
        let code = hex(code)?;
        let lowercase = if lower.is_empty() {
            None
        } else {
            Some(hex(lower)?)
        };
        if name.ends_with(", First>") {
            first = Some((code, (*category).to_owned()));
            continue;
        }
        if name.ends_with(", Last>") {
            let Some((start, category)) = first.take() else {
                bail!("range end {code:x} without a start");
            };
            for cp in start..=code {
                out.insert(
                    cp,
                    Assigned {
                        category: category.clone(),
                        lowercase: None,
                    },
                );
            }
            continue;
        }
        out.insert(
            code,
            Assigned {
                category: (*category).to_owned(),
                lowercase,
            },
        );
    }
    Ok(out)
}

/// Unconditional full lowercase mappings (entries with a condition list are
/// skipped, as Python's generator does).
fn parse_special_lowercase(text: &str) -> Result<BTreeMap<u32, Vec<u32>>> {
    let mut out = BTreeMap::new();
    for fields in records(text) {
        match fields.as_slice() {
            [code, lower, _title, _upper, ""] | [code, lower, _title, _upper] => {
                out.insert(hex(code)?, hex_list(lower)?);
            }
            [_, _, _, _, _condition, ..] => {}
            other => bail!("SpecialCasing.txt line with {} fields", other.len()),
        }
    }
    Ok(out)
}

/// Full case folding: status `F`, else `C`.
fn parse_case_folding(text: &str) -> Result<BTreeMap<u32, Vec<u32>>> {
    let mut common = BTreeMap::new();
    let mut full = BTreeMap::new();
    for fields in records(text) {
        let [code, status, mapping, ..] = fields.as_slice() else {
            bail!("CaseFolding.txt line with {} fields", fields.len());
        };
        match *status {
            "C" => {
                common.insert(hex(code)?, hex_list(mapping)?);
            }
            "F" => {
                full.insert(hex(code)?, hex_list(mapping)?);
            }
            _ => {}
        }
    }
    common.extend(full);
    Ok(common)
}

fn render(
    data: &BTreeMap<u32, Assigned>,
    special_lower: &BTreeMap<u32, Vec<u32>>,
    folding: &BTreeMap<u32, Vec<u32>>,
) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "\n/// Characters whose full case folding is not their lowercase mapping.\n\
         pub(crate) const CASEFOLD_SPECIAL: &[(char, &str)] = &[\n",
    );
    for cp in 0..=0x10_ffff_u32 {
        if char::from_u32(cp).is_none() {
            continue;
        }
        let lower = special_lower
            .get(&cp)
            .cloned()
            .unwrap_or_else(|| vec![data.get(&cp).and_then(|a| a.lowercase).unwrap_or(cp)]);
        let fold = folding.get(&cp).cloned().unwrap_or_else(|| vec![cp]);
        if fold != lower {
            let mut folded = String::new();
            for c in &fold {
                let _ = write!(folded, "\\u{{{c:x}}}");
            }
            let _ = writeln!(out, "    ('\\u{{{cp:x}}}', \"{folded}\"),");
        }
    }
    out.push_str(
        "];\n\n/// Inclusive code point ranges that are not printable (escaped by a repr).\n\
         pub(crate) const NON_PRINTABLE: &[(u32, u32)] = &[\n",
    );
    let printable = |cp: u32| {
        cp == 0x20
            || data.get(&cp).is_some_and(|a| {
                !matches!(
                    a.category.as_str(),
                    "Cc" | "Cf" | "Cs" | "Co" | "Cn" | "Zl" | "Zp" | "Zs"
                )
            })
    };
    let mut start: Option<u32> = None;
    for cp in 0..=0x11_0000_u32 {
        let open = cp <= 0x10_ffff && !printable(cp);
        match (open, start) {
            (true, None) => start = Some(cp),
            (false, Some(s)) => {
                let _ = writeln!(out, "    ({s:#x}, {:#x}),", cp - 1);
                start = None;
            }
            _ => {}
        }
    }
    out.push_str("];\n");
    out
}

#[cfg(test)]
mod tests {
    use super::{TABLES_FILE, UCD_DIR, generate};
    use crate::workspace_root;

    // A changed data file gives different tables, so the drift test
    // (`fixtures::tests`) can fail.
    #[test]
    fn a_changed_ucd_file_changes_the_tables() {
        let root = workspace_root();
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["UnicodeData.txt", "SpecialCasing.txt", "CaseFolding.txt"] {
            std::fs::copy(root.join(UCD_DIR).join(name), dir.path().join(name)).expect("copy");
        }
        let folding = dir.path().join("CaseFolding.txt");
        let text = std::fs::read_to_string(&folding).expect("read");
        // Drop the full folding of U+00DF (sharp s -> "ss").
        let edited: String = text
            .lines()
            .filter(|l| !l.starts_with("00DF; F;"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_ne!(edited.len(), text.len(), "the edit must remove a line");
        std::fs::write(&folding, edited).expect("write");
        let generated = generate(dir.path()).expect("generate");
        let committed = std::fs::read_to_string(root.join(TABLES_FILE)).expect("committed tables");
        assert_ne!(generated, committed);
        assert!(committed.contains("('\\u{df}', \"\\u{73}\\u{73}\"),"));
        assert!(!generated.contains("('\\u{df}',"));
    }
}
