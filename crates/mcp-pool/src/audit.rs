//! Where denials are recorded besides the log: an `admin_events` row per
//! refused tool when a store is given.

use serde_json::json;

use crate::error::DenialReason;

/// The `admin_events.kind` of a tool refused at registration.
pub const TOOL_DENIED_KIND: &str = "mcp.tool_denied";
/// The `admin_events.entity_type` of such a row.
pub const TOOL_ENTITY_TYPE: &str = "mcp_tool";
/// The actor recorded for it.
pub const POOL_ACTOR_ID: &str = "mcp-pool";

/// One refused tool, as a sink receives it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct DenialRecord<'a> {
    /// The server that listed it.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Why it was refused.
    pub reason: &'a DenialReason,
    /// The logged message.
    pub message: &'a str,
}

impl DenialRecord<'_> {
    /// The `entity_id` of its row: `server/tool`.
    pub fn entity_id(&self) -> String {
        format!("{}/{}", self.server, self.tool)
    }

    /// The row's `detail_json`.
    pub fn detail(&self) -> serde_json::Value {
        json!({
            "server": self.server,
            "tool": self.tool,
            "reason": self.reason.code(),
            "message": self.message,
        })
    }
}

/// Records denials. Called from a blocking thread, once per refused tool
/// per listing; an error is logged and does not change the verdict.
pub trait DenialSink: Send + Sync {
    /// Records one denial.
    ///
    /// # Errors
    ///
    /// Whatever the sink's storage reports.
    fn record(
        &self,
        denial: &DenialRecord<'_>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

#[cfg(feature = "store")]
impl DenialSink for state_sqlite::Engine {
    fn record(
        &self,
        denial: &DenialRecord<'_>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let conn = self.conn()?;
        let entity_id = denial.entity_id();
        let detail = denial.detail();
        state_sqlite::admin::record_admin_event(
            &conn,
            &state_sqlite::admin::NewAdminEvent {
                kind: TOOL_DENIED_KIND,
                entity_type: Some(TOOL_ENTITY_TYPE),
                entity_id: Some(&entity_id),
                actor_type: "system",
                actor_id: POOL_ACTOR_ID,
                detail: &detail,
            },
        )?;
        Ok(())
    }
}
