//! One file per subcommand.

pub mod analyze;
pub mod diff;
pub mod inspect;
pub mod simulate;
pub mod timeline;
