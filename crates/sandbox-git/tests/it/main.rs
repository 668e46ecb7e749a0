//! Integration tests of sandbox-git against real repositories in temp dirs.

mod backend;
mod crash;
mod evidence;
mod lifecycle;
mod merge;
mod support;
mod toolkit;
mod untracked;
