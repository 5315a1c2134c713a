//! What a session keeps when the machine misbehaves: a kill at any instant of a patch, a
//! full disk under the rollout, a copied session file, a rollout rewritten by hand, a huge
//! session being loaded — each through the real binary.
//!
//! - `patch_kill`: SIGKILL and SIGTERM at random instants of a patch leave every file whole
//!   and, once the session resumes, the patch all or nothing;
//! - `full_disk`: a rollout on a full tmpfs fails the turn visibly and loses nothing else;
//! - `identity`: a copied session file is never taken for another thread, and paging ends;
//! - `reformatted`: a rollout rewritten by another JSON writer still reads whole;
//! - `big_session`: loading a session with a 200 MB line holds up no other request;
//! - `session_files`: session files are private whatever the umask; an empty one is explained.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

#[path = "durability/big_session.rs"]
mod big_session;
#[path = "durability/full_disk.rs"]
mod full_disk;
#[path = "durability/identity.rs"]
mod identity;
#[path = "durability/patch_kill.rs"]
mod patch_kill;
#[path = "durability/reformatted.rs"]
mod reformatted;
#[path = "durability/session_files.rs"]
mod session_files;
