//! What the analyzer reads of a record: typed views of the objects it follows, the skimming
//! reader that fills them from JSON bytes, and [`Prepared`](prepare::Prepared), a record read
//! ahead of its turn.

pub(crate) mod prepare;
#[cfg(test)]
pub(crate) mod probe;
pub(crate) mod skim;
pub(crate) mod view;
