//! Plain data shared by deputy's engine and every front door.
//!
//! A front door submits [`Submission`]s carrying an [`Op`] and reads [`Event`]s
//! carrying an [`EventMsg`]. The serialized forms use Codex's snake_case tags
//! and field names so that clients written for Codex read them unchanged.
//!
//! Architecture invariant: this crate is data only — no I/O, no async runtime.

mod config_types;
mod events;
mod models;
mod ops;

pub use config_types::*;
pub use events::*;
pub use models::*;
pub use ops::*;
