//! The ready-set scheduler: which ops may start, given the ones that
//! finished or failed and a cap on how many run at once.
//!
//! **Invariants:** an op starts only after every one of its dependencies
//! succeeded; at most `cap` ops are running; a failed op blocks every op
//! that depends on it, directly or through others, and a blocked op never
//! starts; on an acyclic plan every op ends (succeeded, failed or blocked)
//! once every started op is finished.

use crate::plan::ValidPlan;

/// Where an op is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpState {
    /// Not started: a dependency has not finished yet, or the cap is full.
    Waiting,
    /// Started and not finished.
    Running,
    /// Finished and succeeded.
    Succeeded,
    /// Finished and failed.
    Failed,
    /// Never to start: the op at this index (a dependency, or a dependency
    /// of one) failed.
    Blocked {
        /// The failed op that blocked it.
        by: usize,
    },
}

impl OpState {
    /// Whether the op has ended (succeeded, failed or blocked).
    pub fn is_end(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Blocked { .. })
    }
}

/// A call the scheduler refuses (a caller bug, never input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// `finish` of an op that is not running.
    #[error("op {op} is not running ({state:?})")]
    NotRunning {
        /// The op.
        op: usize,
        /// Its state.
        state: OpState,
    },
    /// An index past the plan.
    #[error("op {0} is not in the plan")]
    NoSuchOp(usize),
}

/// The ready set of one flow.
#[derive(Debug, Clone)]
pub struct Scheduler {
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    state: Vec<OpState>,
    /// Dependencies of each op not yet succeeded.
    pending: Vec<usize>,
    running: usize,
    cap: usize,
}

impl Scheduler {
    /// A scheduler with nothing started; `cap` ops at most run at once (a
    /// cap of 0 counts as 1).
    pub fn new(plan: &ValidPlan, cap: usize) -> Self {
        let n = plan.ops().len();
        let deps: Vec<Vec<usize>> = (0..n).map(|i| plan.deps(i).to_vec()).collect();
        let dependents = (0..n).map(|i| plan.dependents(i).to_vec()).collect();
        Self {
            pending: deps.iter().map(Vec::len).collect(),
            deps,
            dependents,
            state: vec![OpState::Waiting; n],
            running: 0,
            cap: cap.max(1),
        }
    }

    /// Marks as running, and returns in plan order, every op that may start
    /// now: waiting, all dependencies succeeded, within the cap.
    pub fn start_ready(&mut self) -> Vec<usize> {
        let mut started = Vec::new();
        for i in 0..self.state.len() {
            if self.running >= self.cap {
                break;
            }
            if self.state[i] == OpState::Waiting && self.pending[i] == 0 {
                self.state[i] = OpState::Running;
                self.running += 1;
                started.push(i);
            }
        }
        started
    }

    /// Records the end of a running op. A failure blocks every waiting op
    /// that depends on it (transitively); those are returned, in plan
    /// order.
    pub fn finish(&mut self, op: usize, ok: bool) -> Result<Vec<usize>, ScheduleError> {
        let state = *self.state.get(op).ok_or(ScheduleError::NoSuchOp(op))?;
        if state != OpState::Running {
            return Err(ScheduleError::NotRunning { op, state });
        }
        self.running -= 1;
        if ok {
            self.state[op] = OpState::Succeeded;
            for &j in &self.dependents[op] {
                self.pending[j] -= 1;
            }
            return Ok(Vec::new());
        }
        self.state[op] = OpState::Failed;
        let mut blocked = Vec::new();
        let mut stack = vec![op];
        while let Some(i) = stack.pop() {
            for &j in &self.dependents[i] {
                if self.state[j] == OpState::Waiting {
                    self.state[j] = OpState::Blocked { by: op };
                    blocked.push(j);
                    stack.push(j);
                }
            }
        }
        blocked.sort_unstable();
        Ok(blocked)
    }

    /// Records an op as already succeeded without running it (a resumed
    /// flow's finished ops); only a waiting op whose dependencies all
    /// succeeded moves. Returns whether it moved.
    pub fn mark_succeeded(&mut self, op: usize) -> bool {
        if self.state.get(op) != Some(&OpState::Waiting) || self.pending[op] != 0 {
            return false;
        }
        self.state[op] = OpState::Running;
        self.running += 1;
        self.finish(op, true).is_ok()
    }

    /// Records an op as already failed without running it (a resumed
    /// flow's failed ops); only a waiting op whose dependencies all
    /// succeeded moves. Returns the ops it blocks, or `None` if it did not
    /// move.
    pub fn mark_failed(&mut self, op: usize) -> Option<Vec<usize>> {
        if self.state.get(op) != Some(&OpState::Waiting) || self.pending[op] != 0 {
            return None;
        }
        self.state[op] = OpState::Running;
        self.running += 1;
        self.finish(op, false).ok()
    }

    /// The state of `op`.
    pub fn state(&self, op: usize) -> Option<OpState> {
        self.state.get(op).copied()
    }

    /// How many ops run now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Whether no op is waiting or running.
    pub fn is_done(&self) -> bool {
        self.state.iter().all(|s| s.is_end())
    }

    /// The dependencies of `op` (indexes).
    pub fn deps(&self, op: usize) -> &[usize] {
        self.deps.get(op).map_or(&[], Vec::as_slice)
    }
}
