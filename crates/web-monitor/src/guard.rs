//! Safe by default: the Host check (DNS rebinding), the access token
//! (bearer header or cookie), and the same-origin plus CSRF-token check of
//! every POST.

use std::net::SocketAddr;

use axum::http::{HeaderMap, Method, header};

/// The cookie holding the access token once `?token=` was given.
pub const TOKEN_COOKIE: &str = "lionrt_token";
/// The header a POST carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The access rules of one server.
#[derive(Debug, Clone)]
pub struct Guard {
    /// Host header values accepted (lower-case, with and without port).
    hosts: Vec<String>,
    /// The access token, if one is required.
    token: Option<String>,
    /// The CSRF token every POST must carry.
    csrf: String,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The Host header names another site (DNS rebinding) or is missing.
    #[error("the Host header {0:?} is not this server's (DNS rebinding protection)")]
    Host(String),
    /// No token, or the wrong one.
    #[error("a token is required (Authorization: Bearer, or open the page once with ?token=)")]
    Token,
    /// A POST from another origin, or none named.
    #[error("a cross-site request is refused: Origin {0:?} is not this server's")]
    Origin(String),
    /// A POST without the page's CSRF token.
    #[error("the CSRF token is missing or wrong")]
    Csrf,
}

impl Guard {
    /// The rules for a server on `listen`, also answering to `extra_hosts`,
    /// with an optional access token and the CSRF token.
    pub fn new(
        listen: SocketAddr,
        extra_hosts: &[String],
        token: Option<String>,
        csrf: String,
    ) -> Self {
        let port = listen.port();
        let mut names: Vec<String> = vec![
            listen.ip().to_string(),
            "localhost".into(),
            "127.0.0.1".into(),
            "[::1]".into(),
        ];
        if listen.is_ipv6() {
            names.push(format!("[{}]", listen.ip()));
        }
        names.extend(extra_hosts.iter().map(|h| h.to_ascii_lowercase()));
        let mut hosts = Vec::new();
        for n in names {
            hosts.push(format!("{n}:{port}"));
            if port == 80 {
                hosts.push(n);
            }
        }
        Guard {
            hosts,
            token: token.filter(|t| !t.is_empty()),
            csrf,
        }
    }

    /// The CSRF token pages send back.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether a token is required.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Checks the Host header.
    ///
    /// # Errors
    ///
    /// [`Refusal::Host`] when it names another host.
    pub fn host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if self.hosts.contains(&host) {
            Ok(())
        } else {
            Err(Refusal::Host(host))
        }
    }

    /// Whether `given` is the token (compared in constant time).
    pub fn token_matches(&self, given: &str) -> bool {
        match &self.token {
            None => true,
            Some(t) => constant_eq(t.as_bytes(), given.as_bytes()),
        }
    }

    /// Checks the access token: `Authorization: Bearer T` or the cookie.
    ///
    /// # Errors
    ///
    /// [`Refusal::Token`] when one is required and not given.
    pub fn token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if self.token.is_none() {
            return Ok(());
        }
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        if bearer.is_some_and(|b| self.token_matches(b.trim())) {
            return Ok(());
        }
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == TOKEN_COOKIE)
            .map(|(_, v)| v.to_owned());
        if cookie.is_some_and(|c| self.token_matches(&c)) {
            return Ok(());
        }
        Err(Refusal::Token)
    }

    /// Checks a state-changing request: it comes from this server's own
    /// origin (the Origin header, else the Referer, names an accepted
    /// host) and carries the CSRF token.
    ///
    /// # Errors
    ///
    /// [`Refusal::Origin`] or [`Refusal::Csrf`].
    pub fn same_origin(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        if method == Method::GET || method == Method::HEAD {
            return Ok(());
        }
        let origin = headers
            .get(header::ORIGIN)
            .or_else(|| headers.get(header::REFERER))
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let authority = origin
            .strip_prefix("http://")
            .map(|rest| rest.split('/').next().unwrap_or_default())
            .unwrap_or_default();
        if authority.is_empty() || !self.hosts.iter().any(|h| h == authority) {
            return Err(Refusal::Origin(origin));
        }
        let csrf = headers
            .get(CSRF_HEADER)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if constant_eq(csrf.as_bytes(), self.csrf.as_bytes()) {
            Ok(())
        } else {
            Err(Refusal::Csrf)
        }
    }
}

/// Byte equality in time independent of where the inputs differ.
fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh random token (128 bits from the kernel, hex).
///
/// # Errors
///
/// When `/dev/urandom` cannot be read.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().expect("header"));
        }
        h
    }

    fn guard(token: Option<&str>) -> Guard {
        Guard::new(
            "127.0.0.1:8765".parse().expect("addr"),
            &[],
            token.map(str::to_owned),
            "c5rf".into(),
        )
    }

    #[test]
    fn the_host_must_be_this_server() {
        let g = guard(None);
        assert!(g.host(&headers(&[("host", "127.0.0.1:8765")])).is_ok());
        assert!(g.host(&headers(&[("host", "LOCALHOST:8765")])).is_ok());
        assert!(matches!(
            g.host(&headers(&[("host", "evil.example:8765")])),
            Err(Refusal::Host(_))
        ));
        assert!(g.host(&headers(&[("host", "localhost:9999")])).is_err());
        assert!(g.host(&HeaderMap::new()).is_err());
    }

    #[test]
    fn a_token_is_checked_as_bearer_or_cookie() {
        let g = guard(Some("s3cret-token"));
        assert_eq!(g.token(&HeaderMap::new()), Err(Refusal::Token));
        assert!(
            g.token(&headers(&[("authorization", "Bearer s3cret-token")]))
                .is_ok()
        );
        assert!(
            g.token(&headers(&[("authorization", "Bearer wrong")]))
                .is_err()
        );
        assert!(
            g.token(&headers(&[("cookie", "a=b; lionrt_token=s3cret-token")]))
                .is_ok()
        );
        assert!(
            g.token(&headers(&[("cookie", "lionrt_token=s3cret")]))
                .is_err()
        );
        assert!(guard(None).token(&HeaderMap::new()).is_ok());
    }

    #[test]
    fn a_post_needs_this_origin_and_the_csrf_token() {
        let g = guard(None);
        let ok = headers(&[
            ("origin", "http://127.0.0.1:8765"),
            ("x-csrf-token", "c5rf"),
        ]);
        assert!(g.same_origin(&Method::POST, &ok).is_ok());
        let other = headers(&[("origin", "http://evil.example"), ("x-csrf-token", "c5rf")]);
        assert!(matches!(
            g.same_origin(&Method::POST, &other),
            Err(Refusal::Origin(_))
        ));
        let none = headers(&[("x-csrf-token", "c5rf")]);
        assert!(g.same_origin(&Method::POST, &none).is_err());
        let no_csrf = headers(&[("origin", "http://localhost:8765")]);
        assert_eq!(g.same_origin(&Method::POST, &no_csrf), Err(Refusal::Csrf));
        let referer = headers(&[
            ("referer", "http://localhost:8765/session/x"),
            ("x-csrf-token", "c5rf"),
        ]);
        assert!(g.same_origin(&Method::POST, &referer).is_ok());
        assert!(g.same_origin(&Method::GET, &HeaderMap::new()).is_ok());
    }

    #[test]
    fn random_tokens_differ() {
        let a = random_token().expect("urandom");
        assert_eq!(a.len(), 32);
        assert_ne!(a, random_token().expect("urandom"));
    }
}
