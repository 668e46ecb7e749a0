//! The scripted endpoint: a script plus the calls it has answered.

use crate::error::Error;
use crate::script::{Response, ScriptCall, ScriptModel};

/// Answers calls from a script and records them.
///
/// `Clone` gives the clone its own deep copy of the script (an independent
/// positional cursor: a clone's first call gets entry 0 whatever the
/// original consumed) and its own copy of the calls recorded so far, so
/// calls made afterwards on one are not seen by the other.
#[derive(Debug, Clone)]
pub struct ScriptedEndpoint {
    script: ScriptModel,
    calls: Vec<ScriptCall>,
}

impl ScriptedEndpoint {
    /// An endpoint replaying `script`.
    pub fn new(script: ScriptModel) -> Self {
        Self {
            script,
            calls: Vec::new(),
        }
    }

    /// Answers one call (recorded whether or not the script has an answer).
    pub fn call(&mut self, call: ScriptCall) -> Result<Response, Error> {
        let r = self.script.next(&call);
        self.calls.push(call);
        r
    }

    /// Every call made on this endpoint (and, for a clone, those made on
    /// the original before cloning).
    pub fn calls(&self) -> &[ScriptCall] {
        &self.calls
    }

    /// The script and its replay state.
    pub fn script(&self) -> &ScriptModel {
        &self.script
    }
}
