//! Plain data shared by deputy's engine and every front door.
//!
//! A front door submits [`Submission`]s carrying an [`Op`] and reads a thread's
//! [`ThreadEvent`]s: numbered, tagged with thread and turn, and about [`ThreadItem`]s
//! with ids. Codex's own [`EventMsg`]s, which `codex/event` carries, are derived from
//! them in one place, [`codex_events`]. Serialized forms use Codex's snake_case tags
//! and field names so that clients written for Codex read them unchanged.
//!
//! Architecture invariant: this crate is data only — no I/O, no async runtime.

mod codex_events;
mod config_types;
mod events;
mod function_output;
mod items;
mod mcp;
mod models;
mod ops;
mod question;
mod response_item_de;
mod review;
mod tagged;
mod thread_events;

pub use codex_events::codex_events;
pub use config_types::*;
pub use events::*;
pub use function_output::*;
pub use items::*;
pub use mcp::*;
pub use models::*;
pub use ops::*;
pub use question::*;
pub use review::*;
pub use thread_events::*;
