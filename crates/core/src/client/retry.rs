//! When to send a failed request again: exponential backoff and `Retry-After`.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Delay before the first retry; each later retry doubles it.
const BACKOFF_BASE: Duration = Duration::from_millis(200);
/// No computed backoff waits longer than this.
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// A server-requested delay is honoured up to this long, so that a bogus
/// header cannot park a turn for hours.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// Whether a status is worth sending the same request again for.
pub(super) fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// Backoff before retry number `attempt` (1-based): 200 ms doubling, ±10 % jitter, at most 30 s.
pub(super) fn backoff(attempt: u64) -> Duration {
    let exponent = attempt.saturating_sub(1).min(32) as i32;
    let nominal = BACKOFF_BASE.as_secs_f64() * 2f64.powi(exponent);
    let jitter = 0.9 + fastrand::f64() * 0.2;
    Duration::from_secs_f64(nominal * jitter).min(BACKOFF_CAP)
}

/// The delay a response asks for, from `retry-after-ms` or `Retry-After`
/// (delta-seconds or an HTTP date), capped.
pub(super) fn requested_delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let delay = if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        Duration::try_from_secs_f64(ms / 1000.0).ok()?
    } else {
        let value = header("retry-after")?;
        match value.parse::<f64>() {
            Ok(secs) => Duration::try_from_secs_f64(secs).ok()?,
            Err(_) => {
                let at = parse_http_date(value)?;
                // A date already in the past means "now".
                at.duration_since(now).unwrap_or(Duration::ZERO)
            }
        }
    };
    Some(delay.min(RETRY_AFTER_CAP))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form
/// RFC 9110 lets servers send.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let mut parts = value.split_ascii_whitespace();
    let _weekday = parts.next()?;
    let day: u8 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => time::Month::January,
        "Feb" => time::Month::February,
        "Mar" => time::Month::March,
        "Apr" => time::Month::April,
        "May" => time::Month::May,
        "Jun" => time::Month::June,
        "Jul" => time::Month::July,
        "Aug" => time::Month::August,
        "Sep" => time::Month::September,
        "Oct" => time::Month::October,
        "Nov" => time::Month::November,
        "Dec" => time::Month::December,
        _ => return None,
    };
    let year: i32 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':').map(|n| n.parse::<u8>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    if parts.next()? != "GMT" || parts.next().is_some() {
        return None;
    }
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    let clock = time::Time::from_hms(hour, minute, second).ok()?;
    let unix = date.with_time(clock).assume_utc().unix_timestamp();
    let unix = u64::try_from(unix).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(unix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn backoff_doubles_from_200ms_within_ten_percent_and_caps_at_30s() {
        for (attempt, nominal_ms) in [(1u64, 200.0), (2, 400.0), (3, 800.0), (6, 6400.0)] {
            let ms = backoff(attempt).as_secs_f64() * 1000.0;
            assert!(
                (nominal_ms * 0.9..=nominal_ms * 1.1).contains(&ms),
                "attempt {attempt}: {ms} ms"
            );
        }
        assert_eq!(backoff(40), BACKOFF_CAP);
        assert_eq!(backoff(u64::MAX), BACKOFF_CAP);
    }

    #[test]
    fn retry_after_accepts_seconds_milliseconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(
            requested_delay(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            requested_delay(&headers(&[("retry-after-ms", "250")]), now),
            Some(Duration::from_millis(250))
        );
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            requested_delay(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]),
                now
            ),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            requested_delay(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_ms_wins_and_huge_or_garbage_values_are_tamed() {
        let now = SystemTime::UNIX_EPOCH;
        let both = headers(&[("retry-after", "9"), ("retry-after-ms", "20")]);
        assert_eq!(requested_delay(&both, now), Some(Duration::from_millis(20)));
        let huge = headers(&[("retry-after", "86400")]);
        assert_eq!(requested_delay(&huge, now), Some(RETRY_AFTER_CAP));
        for garbage in ["soon", "-1", "NaN", "Sun, 32 Nov 1994 08:49:37 GMT", ""] {
            let map = headers(&[("retry-after", garbage)]);
            assert_eq!(requested_delay(&map, now), None, "{garbage:?}");
        }
        assert_eq!(requested_delay(&HeaderMap::new(), now), None);
    }

    #[test]
    fn only_429_and_5xx_are_retryable() {
        assert!(is_retryable_status(StatusCode::TOO_MANY_REQUESTS));
        assert!(is_retryable_status(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(is_retryable_status(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!is_retryable_status(StatusCode::UNAUTHORIZED));
        assert!(!is_retryable_status(StatusCode::BAD_REQUEST));
    }
}
