//! Integration tests for cli-supervisor: real processes, tempdirs, no $HOME.

mod cancel;
mod containment;
mod echo;
mod evidence;
mod orphan;
mod redaction;
mod secrets;
mod spawn;
mod stream;
mod support;
mod teardown;
mod watchdog;
