//! The prompt an op receives: its own, where its artifacts go, and the
//! results of the ops it depends on.

/// One dependency's result, as the dependent is told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepResult<'a> {
    /// The dependency's op id.
    pub op: &'a str,
    /// Its recorded status (e.g. `completed`).
    pub status: &'a str,
    /// The agent's final text.
    pub text: &'a str,
    /// Its artifact subdirectory, if it has one.
    pub artifact_dir: Option<&'a str>,
}

/// The heading the dependencies' results come under.
pub const RESULTS_HEADING: &str = "## Results of the ops this one depends on";

/// `prompt`, then (when given) the op's artifact directory, then each
/// dependency's result under [`RESULTS_HEADING`], in the order given. An
/// op with no dependencies and no artifact directory gets `prompt` as is.
pub fn op_prompt(prompt: &str, artifact_dir: Option<&str>, deps: &[DepResult<'_>]) -> String {
    let mut out = prompt.trim_end().to_owned();
    if let Some(dir) = artifact_dir {
        out.push_str("\n\nWrite any files you produce for this task under ");
        out.push_str(dir);
        out.push('.');
    }
    if !deps.is_empty() {
        out.push_str("\n\n");
        out.push_str(RESULTS_HEADING);
        for dep in deps {
            out.push_str(&format!("\n\n### {} ({})\n\n", dep.op, dep.status));
            let text = dep.text.trim();
            out.push_str(if text.is_empty() { "(no text)" } else { text });
            if let Some(dir) = dep.artifact_dir {
                out.push_str(&format!("\n\n(its files: {dir})"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependent_gets_every_result_in_order_and_a_root_its_prompt() {
        assert_eq!(op_prompt("do it\n", None, &[]), "do it");
        let deps = [
            DepResult {
                op: "b",
                status: "completed",
                text: " B said so ",
                artifact_dir: Some("/a/b"),
            },
            DepResult {
                op: "c",
                status: "completed",
                text: "",
                artifact_dir: None,
            },
        ];
        let p = op_prompt("merge", Some("/a/d"), &deps);
        let (b, c) = (p.find("### b (completed)"), p.find("### c (completed)"));
        assert!(p.starts_with("merge\n\nWrite any files"), "{p}");
        assert!(p.contains("under /a/d."), "{p}");
        assert!(b.is_some() && c.is_some() && b < c, "{p}");
        assert!(p.contains("B said so\n\n(its files: /a/b)"), "{p}");
        assert!(p.ends_with("### c (completed)\n\n(no text)"), "{p}");
    }
}
