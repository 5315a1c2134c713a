//! A turn's input made into the user message the model reads: text parts as text,
//! each local image read (off the async runtime), checked and inlined as a `data:` URL.
//!
//! Images are sent as they are: deputy neither decodes nor resizes them, so it accepts
//! the formats the model servers take (PNG, JPEG, GIF, WebP), recognised by their first
//! bytes rather than their file names, up to [`MAX_IMAGE_BYTES`].

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use deputy_protocol::{ContentItem, InputItem, ResponseItem};

/// The largest image file sent to the model.
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// Why an image could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file could not be opened or read.
    #[error("cannot read image {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not in an image format the model servers take.
    #[error("{} is not a PNG, JPEG, GIF or WebP image", path.display())]
    NotAnImage {
        /// The file.
        path: PathBuf,
    },
    /// An image URL that cannot be sent.
    #[error("cannot send the image {url}: {reason}")]
    Url {
        /// The URL (its start, for a long `data:` URL).
        url: String,
        /// Why.
        reason: &'static str,
    },
    /// The file is larger than [`MAX_IMAGE_BYTES`].
    #[error("image {} is {size} bytes, more than the 10 MiB deputy sends", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
}

/// The user's input as one history message (text and images, in their order; adjacent
/// text parts joined by a newline) and the text shown as the user's message.
pub(crate) async fn user_message(
    items: Vec<InputItem>,
    cwd: &Path,
) -> Result<(ResponseItem, String), ImageError> {
    let mut content: Vec<ContentItem> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    for item in items {
        match item {
            InputItem::Text { text } => {
                shown.push(text.clone());
                match content.last_mut() {
                    Some(ContentItem::InputText { text: previous }) => {
                        previous.push('\n');
                        previous.push_str(&text);
                    }
                    _ => content.push(ContentItem::InputText { text }),
                }
            }
            InputItem::LocalImage { path } => {
                let path = cwd.join(path);
                let read = path.clone();
                let image_url = tokio::task::spawn_blocking(move || data_url(&read))
                    .await
                    .map_err(|join| ImageError::Read {
                        path: path.clone(),
                        source: std::io::Error::other(join.to_string()),
                    })??;
                content.push(ContentItem::InputImage { image_url });
            }
            InputItem::Image { url } => {
                check_image_url(&url)?;
                content.push(ContentItem::InputImage { image_url: url });
            }
        }
    }
    let message = ResponseItem::Message {
        id: None,
        role: "user".to_string(),
        content,
    };
    Ok((message, shown.join("\n")))
}

/// Checks an image given by URL: an `http(s)` address is the model server's to fetch; a
/// `data:` URL must be base64 of an image in a format the servers take, within the size
/// limit (checked from its length and first bytes, without decoding it whole).
fn check_image_url(url: &str) -> Result<(), ImageError> {
    let refuse = |reason| {
        let shown: String = url.chars().take(48).collect();
        let shown = if shown.len() < url.len() {
            format!("{shown}…")
        } else {
            shown
        };
        Err(ImageError::Url { url: shown, reason })
    };
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        return Ok(());
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return refuse("only data:, http: and https: image URLs can be sent");
    };
    let Some((mime, payload)) = rest.split_once(";base64,") else {
        return refuse("a data: image URL must be base64 (`data:image/png;base64,…`)");
    };
    // Four base64 characters carry three bytes.
    if payload.len() as u64 > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
        return refuse("the image is more than the 10 MiB deputy sends");
    }
    let head = payload.get(..16).unwrap_or(payload);
    let head = base64::engine::general_purpose::STANDARD
        .decode(head)
        .unwrap_or_default();
    match image_type(&head) {
        Some(actual) if actual.eq_ignore_ascii_case(mime) => Ok(()),
        Some(_) => refuse("the data does not match the URL's image type"),
        None => refuse("the data is not a PNG, JPEG, GIF or WebP image"),
    }
}

/// Reads an image file into a `data:` URL, refusing what is not an image or too large.
#[allow(
    clippy::disallowed_methods,
    reason = "blocking: `user_message` runs it in spawn_blocking"
)]
fn data_url(path: &Path) -> Result<String, ImageError> {
    let read_error = |source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let size = file.metadata().map_err(read_error)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or_default());
    // A file that grows while it is read is still cut at the limit.
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
        });
    }
    image_data_url(&bytes).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })
}

/// `bytes` as a `data:` URL, when they are an image in a format the model servers take.
pub(crate) fn image_data_url(bytes: &[u8]) -> Option<String> {
    let mime = image_type(bytes)?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    Some(format!("data:{mime};base64,{encoded}"))
}

/// The MIME type of an image in a format the model servers take, by its signature.
fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest PNG signature plus a little, enough to be recognised.
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn formats_are_recognised_by_their_first_bytes() {
        assert_eq!(image_type(PNG), Some("image/png"));
        assert_eq!(image_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(image_type(b"hello"), None);
        assert_eq!(image_type(b""), None);
    }

    #[tokio::test]
    async fn text_and_images_keep_their_order_and_adjacent_text_is_joined() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), PNG).unwrap();
        let items = vec![
            InputItem::LocalImage {
                path: "a.png".into(),
            },
            InputItem::Text { text: "one".into() },
            InputItem::Text { text: "two".into() },
        ];
        let (message, shown) = user_message(items, dir.path()).await.unwrap();
        assert_eq!(shown, "one\ntwo");
        let ResponseItem::Message { role, content, .. } = message else {
            panic!("not a message: {message:?}");
        };
        assert_eq!(role, "user");
        assert_eq!(
            content,
            vec![
                ContentItem::InputImage {
                    image_url: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==".into()
                },
                ContentItem::InputText {
                    text: "one\ntwo".into()
                },
            ]
        );
    }

    #[tokio::test]
    async fn image_urls_are_sent_as_given_once_checked() {
        let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==";
        let items = vec![
            InputItem::Text {
                text: "compare".into(),
            },
            InputItem::Image { url: png.into() },
            InputItem::Image {
                url: "https://example.com/chart.png".into(),
            },
        ];
        let (message, shown) = user_message(items, Path::new("/")).await.unwrap();
        assert_eq!(shown, "compare");
        let ResponseItem::Message { content, .. } = message else {
            panic!("not a message: {message:?}");
        };
        assert_eq!(
            content[1..],
            [
                ContentItem::InputImage {
                    image_url: png.into()
                },
                ContentItem::InputImage {
                    image_url: "https://example.com/chart.png".into()
                },
            ]
        );
    }

    #[tokio::test]
    async fn an_image_url_that_cannot_be_sent_is_refused_with_the_reason() {
        let huge = format!(
            "data:image/png;base64,iVBORw0KGgo{}",
            "A".repeat(14 * 1024 * 1024)
        );
        let cases = [
            ("file:///etc/passwd", "only data:, http: and https:"),
            ("data:image/png,rawbytes", "must be base64"),
            ("data:image/png;base64,aGVsbG8gd29ybGQ=", "is not a PNG"),
            (
                "data:image/jpeg;base64,iVBORw0KGgoAAAANSUhEUg==",
                "does not match",
            ),
            (huge.as_str(), "more than the 10 MiB"),
        ];
        for (url, reason) in cases {
            let items = vec![InputItem::Image { url: url.into() }];
            let err = user_message(items, Path::new("/")).await.unwrap_err();
            assert!(
                matches!(&err, ImageError::Url { .. }) && err.to_string().contains(reason),
                "{url:.40}: {err}"
            );
            assert!(
                err.to_string().len() < 200,
                "the message quotes only the URL's start"
            );
        }
    }

    #[tokio::test]
    async fn a_missing_file_a_non_image_and_a_too_large_file_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.png"), "just text").unwrap();
        let big = std::fs::File::create(dir.path().join("big.png")).unwrap();
        big.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let attach = |name: &str| {
            vec![InputItem::LocalImage {
                path: dir.path().join(name),
            }]
        };
        let missing = user_message(attach("gone.png"), dir.path()).await;
        assert!(
            matches!(&missing, Err(ImageError::Read { path, .. }) if path.ends_with("gone.png")),
            "{missing:?}"
        );
        let text = user_message(attach("notes.png"), dir.path())
            .await
            .unwrap_err();
        assert_eq!(
            text.to_string(),
            format!(
                "{} is not a PNG, JPEG, GIF or WebP image",
                dir.path().join("notes.png").display()
            )
        );
        let large = user_message(attach("big.png"), dir.path()).await;
        assert!(
            matches!(large, Err(ImageError::TooLarge { size, .. }) if size == MAX_IMAGE_BYTES + 1),
            "{large:?}"
        );
    }
}
