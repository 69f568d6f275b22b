//! Pure decisions: functions from facts to a verdict, with no I/O, each tested by a table.
//! Handlers and the shared steps gather the facts, call, and act on the verdict.

pub mod acl;
pub mod authz;
pub mod identity;
pub mod lock;
pub mod owner_only;
pub mod ownership;
pub mod preconditions;
pub mod public_access;
pub mod unsupported;
pub mod website;
