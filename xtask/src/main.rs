//! Maintainer tasks: `cargo xtask <task>`.

fn main() -> anyhow::Result<()> {
    Ok(())
}
