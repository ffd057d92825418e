//! One file per subcommand.

pub mod analyze;
pub mod check;
pub mod convert;
pub mod diff;
pub mod import;
pub mod inspect;
pub mod lint;
pub mod now;
pub mod record;
pub mod rules;
pub mod serve;
pub mod shell;
pub mod simulate;
pub mod timeline;
pub mod verify;
pub mod wait;
