//! `scripted-leg --script FILE`: the scripted provider's agent CLI, usable
//! without `lionrt` (see `providers_scripted::run_leg`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let script = match (args.next(), args.next(), args.next()) {
        (Some(flag), Some(path), None) if flag == "--script" => PathBuf::from(path),
        _ => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"usage: scripted-leg --script FILE\n",
            );
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    match providers_scripted::run_leg(&script, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("scripted-leg: {error}\n").as_bytes(),
            );
            ExitCode::from(1)
        }
    }
}
