//! `view_image {path}`: attaches an image file to the conversation, as an image part of
//! the tool's output (`input_image` with a `data:` URL on Responses, an `image_url` part on
//! Chat), for models that take images.
//!
//! The path follows the rules of a command's: relative to the turn's working directory,
//! and readable where commands may read (everywhere); a confined thread's commands see a
//! private `/tmp`, so a path there is looked up in it first. The file is read as untrusted
//! (a FIFO or device is refused before a byte is read, off the runtime, with a timeout).
//! What cannot be shown — missing, unreadable, not a PNG/JPEG/GIF/WebP, over 10 MiB — is
//! a tool error text, never a failed turn.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_protocol::OutputContentItem;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::registry::{ToolCall, ToolHandler, ToolOutput};
use super::spec::names;
use crate::client::ToolSpec;
use crate::context::{TurnContext, TurnStop};
use crate::untrusted_file::{self, UnreadableFile};
use crate::user_input::{MAX_IMAGE_BYTES, image_data_url};

/// How long reading the file may take (a hung network mount).
const READ_TIMEOUT: Duration = Duration::from_secs(10);

const DESCRIPTION: &str =
    "Shows you an image file from the filesystem (PNG, JPEG, GIF or WebP, up to 10 MiB).";

#[derive(Deserialize)]
struct ViewImageArgs {
    path: String,
}

/// `view_image`.
pub(super) struct ViewImage;

impl ToolHandler for ViewImage {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            names::VIEW_IMAGE,
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The image file, absolute or relative to the working directory."},
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            let args = match call.arguments::<ViewImageArgs>() {
                Ok(args) => args,
                Err(message) => return Ok(message.into()),
            };
            let path = ctx.config.cwd.join(&args.path);
            let private_tmp = ctx
                .config
                .sandbox_private_tmp
                .as_ref()
                .filter(|_| crate::sandboxing::policy(&ctx.config).is_confined())
                .and_then(|slot| slot.existing());
            let shown = path.display().to_string();
            let read = untrusted_file::off_runtime(READ_TIMEOUT, move || {
                read_image(&path, private_tmp.as_deref())
            })
            .await
            .unwrap_or_else(|| Err(format!("reading {shown} took too long")));
            Ok(match read {
                Ok(image_url) => ToolOutput::Content(vec![
                    OutputContentItem::InputText {
                        text: format!("The image {shown}:"),
                    },
                    OutputContentItem::InputImage { image_url },
                ]),
                Err(why) => format!("view_image failed: {why}").into(),
            })
        })
    }
}

/// The image at `path` as a `data:` URL; `Err` says why it cannot be shown.
fn read_image(path: &Path, private_tmp: Option<&Path>) -> Result<String, String> {
    let path = as_commands_see_it(path, private_tmp);
    let shown = path.display();
    let max = usize::try_from(MAX_IMAGE_BYTES).unwrap_or(usize::MAX);
    let capped = match untrusted_file::read_file(&path, true, max) {
        Ok(Some(capped)) => capped,
        Ok(None) => return Err(format!("{shown} does not exist")),
        Err(UnreadableFile::Io(err)) => return Err(format!("cannot read {shown}: {err}")),
        Err(other) => return Err(format!("cannot read {shown}: {other}")),
    };
    if capped.truncated {
        return Err(format!("{shown} is larger than the 10 MiB an image may be"));
    }
    image_data_url(&capped.bytes)
        .ok_or_else(|| format!("{shown} is not a PNG, JPEG, GIF or WebP image"))
}

/// Where a command of the thread would find `path`: under its private `/tmp` when it has
/// one and the file is there, else the path itself.
fn as_commands_see_it(path: &Path, private_tmp: Option<&Path>) -> PathBuf {
    if let (Some(private), Ok(rest)) = (private_tmp, path.strip_prefix("/tmp")) {
        let inside = private.join(rest);
        if inside.symlink_metadata().is_ok() {
            return inside;
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01";

    #[test]
    fn an_image_becomes_a_data_url_and_anything_else_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("a.png");
        std::fs::write(&png, PNG).unwrap();
        assert!(
            read_image(&png, None)
                .unwrap()
                .starts_with("data:image/png;base64,")
        );
        let text = dir.path().join("notes.png");
        std::fs::write(&text, "not an image").unwrap();
        assert!(
            read_image(&text, None)
                .unwrap_err()
                .contains("is not a PNG")
        );
        assert!(
            read_image(&dir.path().join("missing.png"), None)
                .unwrap_err()
                .contains("does not exist")
        );
        let big = dir.path().join("big.png");
        let mut bytes = PNG.to_vec();
        bytes.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        std::fs::write(&big, bytes).unwrap();
        assert!(read_image(&big, None).unwrap_err().contains("larger than"));
        assert!(
            read_image(dir.path(), None)
                .unwrap_err()
                .contains("a directory")
        );
        let fifo = dir.path().join("pipe.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_image(&fifo, None).unwrap_err().contains("a FIFO"));
    }

    #[test]
    fn a_path_in_tmp_is_looked_up_in_the_private_tmp_commands_see() {
        let private = tempfile::tempdir().unwrap();
        let name = format!("deputy-view-image-{}.png", std::process::id());
        std::fs::write(private.path().join(&name), PNG).unwrap();
        let path = Path::new("/tmp").join(&name);
        assert_eq!(
            as_commands_see_it(&path, Some(private.path())),
            private.path().join(&name)
        );
        assert_eq!(as_commands_see_it(&path, None), path);
        assert_eq!(
            as_commands_see_it(Path::new("/tmp/elsewhere.png"), Some(private.path())),
            Path::new("/tmp/elsewhere.png")
        );
    }
}
