//! The conductor's decisions, with no IO: what a flow of many agent legs
//! is and in which order its legs may run.
//!
//! - [`Plan`]: a DAG of [`Op`]s (id, [`Agent`], `depends_on`, expected
//!   artifacts, an optional synthesis op), read from JSON or YAML
//!   ([`Plan::from_json`], [`Plan::from_yaml`]); its JSON Schema is
//!   `docs/schemas/plan.schema.json`.
//! - [`validate`]: a duplicate id, an unknown dependency, a cycle or more
//!   ops than `max_ops` is a typed [`PlanError`] (with the vocabulary's
//!   `play.blocked.invalid_deps` as its reason), before anything starts.
//! - [`Scheduler`]: the ready set. An op starts only once every dependency
//!   finished, never more than the cap run at once, and a failed op blocks
//!   every op that depends on it, directly or not.
//! - [`op_prompt`]: the prompt an op receives (its own, its artifact
//!   directory, its dependencies' results).
//! - [`flow_outcome`]: the invocation's terminal status and reason from its
//!   ops' ends (the roll-up of LC-037).
//! - [`fanout_plan`] and [`Playbook`]: `lionrt fanout` and `lionrt play`
//!   are plans too.
//!
//! ```
//! use conductor::{Plan, Scheduler, validate};
//!
//! let plan = Plan::from_yaml(r#"
//! ops:
//!   - {id: a, agent: {prompt: "plan it"}}
//!   - {id: b, agent: {prompt: "do it"}, depends_on: [a]}
//! "#)?;
//! let plan = validate(plan, 10)?;
//! let mut s = Scheduler::new(&plan, 4);
//! assert_eq!(s.start_ready(), [0]);          // b waits for a
//! assert!(s.finish(0, true)?.is_empty());
//! assert_eq!(s.start_ready(), [1]);
//! s.finish(1, true)?;
//! assert!(s.is_done());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none.

#![forbid(unsafe_code)]

mod outcome;
mod plan;
mod playbook;
mod prompt;
mod schedule;

pub use outcome::{FlowOutcome, OpEnd, flow_outcome, succeeded};
pub use plan::{Agent, Op, PROVIDERS, Plan, PlanError, ValidPlan, fanout_plan, validate};
pub use playbook::{ACCEPTED_FIELDS, ArgKind, ArgSpec, Playbook, PlaybookError};
pub use prompt::{DepResult, RESULTS_HEADING, op_prompt};
pub use schedule::{OpState, ScheduleError, Scheduler};
