//! Who may talk to a listening server: the same rules for every network door.
//!
//! - A server listens on loopback unless told otherwise; any other address needs a
//!   bearer token (`--auth-token-env VAR`), and a request without it gets 401.
//! - A browser says where a page came from in `Origin`; a page from anywhere but the
//!   allow-list (loopback origins, plus those the operator adds) gets 403, which is what
//!   stops DNS rebinding and cross-site requests. Programs send no `Origin` and pass.
//!
//! The token is compared in constant time, so its bytes cannot be guessed one at a time
//! from how long a refusal takes.

use std::net::SocketAddr;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use subtle::ConstantTimeEq;

/// Origins a loopback page may have without being listed (any port).
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The access rules of one listening server.
#[derive(Clone)]
pub struct Access {
    token: Option<Vec<u8>>,
    origins: Vec<OriginRule>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("origins", &self.origins)
            .finish()
    }
}

/// Why a server may not listen as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// A non-loopback address without a token.
    #[error(
        "listening on {0}, which is not a loopback address, needs a bearer token: pass --auth-token-env VAR with the token in $VAR"
    )]
    TokenRequired(SocketAddr),
    /// The token's variable is unset or empty.
    #[error("--auth-token-env {0}: the variable is not set or empty")]
    EmptyToken(String),
    /// An `--allow-origin` value that is not `scheme://host[:port|:*]`.
    #[error("--allow-origin {0}: expected scheme://host, scheme://host:port or scheme://host:*")]
    BadOrigin(String),
}

/// Why one request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token, or the wrong one: 401.
    Unauthorized,
    /// A browser page from an origin not on the list: 403.
    ForeignOrigin(String),
}

impl Refusal {
    /// The HTTP status this refusal is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::ForeignOrigin(_) => StatusCode::FORBIDDEN,
        }
    }

    /// What the refusal says, for a person.
    pub fn message(&self) -> String {
        match self {
            Self::Unauthorized => {
                "Unauthorized: this server needs `Authorization: Bearer <token>`".into()
            }
            Self::ForeignOrigin(origin) => {
                format!("Forbidden: requests from origin `{origin}` are not allowed")
            }
        }
    }

    /// The whole HTTP answer: status, `WWW-Authenticate` on 401, the message as body.
    pub fn http_response(&self) -> http::Response<Option<String>> {
        let mut response = http::Response::new(Some(self.message()));
        *response.status_mut() = self.status();
        if let Self::Unauthorized = self {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// One allowed origin: a scheme and host, with one port or any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl OriginRule {
    fn parse(rule: &str) -> Option<Self> {
        let (scheme, rest) = rule.split_once("://")?;
        let (host, port) = match rest.rsplit_once(':') {
            // `[::1]` alone has colons inside the brackets.
            Some((host, port)) if !port.contains(']') => {
                let port = match port {
                    "*" => None,
                    port => Some(port.parse().ok()?),
                };
                (host, port)
            }
            _ => (rest, Some(default_port(scheme)?)),
        };
        if host.is_empty() || host.contains('/') {
            return None;
        }
        Some(Self {
            scheme: scheme.to_ascii_lowercase(),
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    fn allows(&self, origin: &OriginRule) -> bool {
        self.scheme == origin.scheme
            && self.host == origin.host
            && self.port.is_none_or(|port| origin.port == Some(port))
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

impl Access {
    /// The rules for a server bound to `bind`: `token` is required unless it is a
    /// loopback address; `origins` are allowed besides the loopback ones.
    pub fn new(
        bind: SocketAddr,
        token: Option<String>,
        origins: &[String],
    ) -> Result<Self, AccessError> {
        if token.is_none() && !bind.ip().is_loopback() {
            return Err(AccessError::TokenRequired(bind));
        }
        let mut rules = Vec::new();
        for origin in LOOPBACK_ORIGINS.iter().copied() {
            rules.extend(OriginRule::parse(origin));
        }
        for origin in origins {
            rules.push(
                OriginRule::parse(origin).ok_or_else(|| AccessError::BadOrigin(origin.clone()))?,
            );
        }
        Ok(Self {
            token: token.map(String::into_bytes),
            origins: rules,
        })
    }

    /// Reads the token from the environment variable `var` (`--auth-token-env`).
    pub fn token_from_env(var: &str) -> Result<String, AccessError> {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => Ok(token.trim().to_string()),
            _ => Err(AccessError::EmptyToken(var.to_string())),
        }
    }

    /// Whether a request with these headers may go on.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(expected) = &self.token {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(bearer_token)
                .unwrap_or_default();
            // Equal lengths are compared byte by byte in constant time; only the
            // length can show in the timing of a refusal.
            if !bool::from(given.as_bytes().ct_eq(expected)) {
                return Err(Refusal::Unauthorized);
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = origin.to_str().unwrap_or("<not UTF-8>");
            let allowed = OriginRule::parse(text)
                .is_some_and(|origin| self.origins.iter().any(|rule| rule.allows(&origin)));
            if !allowed {
                return Err(Refusal::ForeignOrigin(text.to_string()));
            }
        }
        Ok(())
    }

    /// The allowed origins as `scheme://host:port` patterns (`:*` for any port).
    pub fn allowed_origins(&self) -> Vec<String> {
        self.origins
            .iter()
            .map(|rule| match rule.port {
                Some(port) => format!("{}://{}:{port}", rule.scheme, rule.host),
                None => format!("{}://{}:*", rule.scheme, rule.host),
            })
            .collect()
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_non_loopback_address_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            Access::new(public, None, &[]).unwrap_err(),
            AccessError::TokenRequired(public)
        );
        assert!(Access::new(public, Some("t".into()), &[]).is_ok());
        for loopback in ["127.0.0.1:1", "[::1]:1"] {
            assert!(Access::new(loopback.parse().unwrap(), None, &[]).is_ok());
        }
    }

    #[test]
    fn the_token_must_be_given_exactly_as_a_bearer_token() {
        let access = Access::new("0.0.0.0:1".parse().unwrap(), Some("s3cret".into()), &[]).unwrap();
        assert_eq!(access.check(&headers(&[])), Err(Refusal::Unauthorized));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert_eq!(
                access.check(&headers(&[("authorization", wrong)])),
                Err(Refusal::Unauthorized),
                "{wrong}"
            );
        }
        for right in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret "] {
            assert_eq!(access.check(&headers(&[("authorization", right)])), Ok(()));
        }
    }

    #[test]
    fn browsers_from_foreign_origins_are_refused_and_programs_pass() {
        let access = Access::new(
            "127.0.0.1:1".parse().unwrap(),
            None,
            &["https://app.example.com".into()],
        )
        .unwrap();
        assert_eq!(access.check(&headers(&[])), Ok(()));
        for allowed in [
            "http://localhost:3000",
            "http://127.0.0.1:9",
            "http://[::1]:80",
            "https://app.example.com",
            "https://app.example.com:443",
        ] {
            assert_eq!(
                access.check(&headers(&[("origin", allowed)])),
                Ok(()),
                "{allowed}"
            );
        }
        for foreign in [
            "http://evil.example.com",
            "https://app.example.com:8443",
            "http://app.example.com",
            "null",
            "http://localhost.evil.com:80",
        ] {
            assert_eq!(
                access.check(&headers(&[("origin", foreign)])),
                Err(Refusal::ForeignOrigin(foreign.into())),
                "{foreign}"
            );
        }
        assert_eq!(
            Access::new(
                "127.0.0.1:1".parse().unwrap(),
                None,
                &["app.example.com".into()]
            )
            .unwrap_err(),
            AccessError::BadOrigin("app.example.com".into())
        );
    }
}
