//! Where `deputy app-server` listens (`--listen URL`), as Codex's launch flag spells it:
//! `stdio://` (the default), or `ws://IP:PORT`, which is parsed here so that the
//! WebSocket transport only has to be added beside stdio.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// A transport endpoint given with `--listen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenAddress {
    /// JSON-RPC lines on stdin and stdout.
    Stdio,
    /// A WebSocket server on this address (one message per text frame).
    WebSocket(SocketAddr),
}

/// Why a `--listen` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenError {
    /// A URL Codex knows but deputy does not serve.
    #[error("`{0}` is not supported by deputy; use `stdio://`")]
    Unsupported(String),
    /// `ws://` without a valid `IP:PORT`.
    #[error(
        "`{0}` is not a WebSocket address; expected `ws://IP:PORT`, e.g. `ws://127.0.0.1:4500`"
    )]
    BadWebSocket(String),
    /// Not a URL either program knows.
    #[error("unsupported --listen URL `{0}`; expected `stdio://` or `ws://IP:PORT`")]
    Unknown(String),
}

impl FromStr for ListenAddress {
    type Err = ListenError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if value == "stdio://" || value == "stdio" {
            return Ok(Self::Stdio);
        }
        if let Some(rest) = value.strip_prefix("ws://") {
            return rest
                .trim_end_matches('/')
                .parse::<SocketAddr>()
                .map(Self::WebSocket)
                .map_err(|_| ListenError::BadWebSocket(value.to_string()));
        }
        if value == "off" || value.starts_with("unix://") {
            return Err(ListenError::Unsupported(value.to_string()));
        }
        Err(ListenError::Unknown(value.to_string()))
    }
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio => f.write_str("stdio://"),
            Self::WebSocket(addr) => write!(f, "ws://{addr}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_websocket_addresses_parse() {
        assert_eq!("stdio://".parse(), Ok(ListenAddress::Stdio));
        assert_eq!(
            "ws://127.0.0.1:4500".parse(),
            Ok(ListenAddress::WebSocket(SocketAddr::from((
                [127, 0, 0, 1],
                4500
            ))))
        );
        assert_eq!(
            "ws://[::1]:80"
                .parse::<ListenAddress>()
                .map(|a| a.to_string()),
            Ok("ws://[::1]:80".to_string())
        );
    }

    #[test]
    fn other_urls_are_refused_with_what_is_expected() {
        for (value, expected) in [
            ("unix://", ListenError::Unsupported("unix://".into())),
            ("off", ListenError::Unsupported("off".into())),
            (
                "ws://localhost",
                ListenError::BadWebSocket("ws://localhost".into()),
            ),
            (
                "tcp://1.2.3.4:5",
                ListenError::Unknown("tcp://1.2.3.4:5".into()),
            ),
            ("", ListenError::Unknown(String::new())),
        ] {
            assert_eq!(value.parse::<ListenAddress>(), Err(expected), "{value}");
        }
    }
}
