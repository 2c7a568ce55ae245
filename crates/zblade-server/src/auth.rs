//! Bearer tokens and the per-user rate limit. A token is shown once, when it is made; the
//! server keeps only its sha256, so a leaked database does not leak working tokens.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;
use sha2::{Digest, Sha256};

/// Prefix of every token, so a token pasted in the wrong place is recognisable.
pub const TOKEN_PREFIX: &str = "zbt_";

/// A new token: (its id, for `token revoke`; the secret the client sends).
pub fn new_token() -> (String, String) {
    let mut rng = rand::rng();
    let mut id = [0u8; 6];
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut id);
    rng.fill_bytes(&mut secret);
    (
        format!("tok_{}", hex::encode(id)),
        format!("{TOKEN_PREFIX}{}", hex::encode(secret)),
    )
}

/// What the database stores of a token.
pub fn hash_token(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Where the limiters read the time: the system's monotonic clock, or one a test moves by hand
/// (so a test of refills does not depend on how fast its requests are answered).
#[derive(Clone)]
pub struct Clock(std::sync::Arc<dyn Fn() -> Instant + Send + Sync>);

impl Clock {
    /// The system's monotonic clock.
    pub fn system() -> Clock {
        Clock(std::sync::Arc::new(Instant::now))
    }

    /// A clock that shows `now()` of the given function.
    pub fn from_fn(now: impl Fn() -> Instant + Send + Sync + 'static) -> Clock {
        Clock(std::sync::Arc::new(now))
    }

    /// The time now.
    pub fn now(&self) -> Instant {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// A token bucket per key (a user id; an address for failed sign-ins): `rate` events per
/// second on average, bursts up to `burst`.
pub struct RateLimiter<K = i64> {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<K, (f64, Instant)>>,
    clock: Clock,
}

/// Buckets are forgotten once this many keys are held and they are full again, so a flood of
/// addresses cannot grow the map without bound.
const PRUNE_AT: usize = 10_000;

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// A limiter allowing `rate` events per second per key, in bursts of `burst`.
    pub fn new(rate: f64, burst: f64) -> RateLimiter<K> {
        Self::with_clock(rate, burst, Clock::system())
    }

    /// The same, reading the time from `clock`.
    pub fn with_clock(rate: f64, burst: f64, clock: Clock) -> RateLimiter<K> {
        RateLimiter {
            rate: rate.max(0.001),
            burst: burst.max(1.0),
            buckets: Mutex::new(HashMap::new()),
            clock,
        }
    }

    /// Takes one event from `key`'s bucket, or says how long until one is free.
    pub fn check(&self, key: K) -> Result<(), Duration> {
        self.with_bucket(key, |tokens| {
            if *tokens >= 1.0 {
                *tokens -= 1.0;
                true
            } else {
                false
            }
        })
    }

    /// Whether `key` has an event left, without taking it.
    pub fn peek(&self, key: K) -> Result<(), Duration> {
        self.with_bucket(key, |tokens| *tokens >= 1.0)
    }

    /// Forgets the keys whose buckets have filled up again (they would start full anyway).
    pub fn prune(&self) {
        let now = self.clock.now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (rate, burst) = (self.rate, self.burst);
        buckets.retain(|_, (tokens, last)| *tokens + now.duration_since(*last).as_secs_f64() * rate < burst);
    }

    /// Keys held now (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with_bucket(&self, key: K, take: impl FnOnce(&mut f64) -> bool) -> Result<(), Duration> {
        let now = self.clock.now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if buckets.len() >= PRUNE_AT {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (tokens, last)| *tokens + now.duration_since(*last).as_secs_f64() * rate < burst);
        }
        let (tokens, last) = buckets.entry(key).or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * self.rate).min(self.burst);
        *last = now;
        if take(tokens) {
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.rate))
        }
    }
}

/// The address failed sign-ins are counted against. A request from a trusted proxy carries
/// the client's address in `X-Forwarded-For` (each proxy appends the address it saw): the
/// right-most entry that is not itself a trusted proxy is the client. From anyone else the
/// header is ignored, since a client can write what it likes there. IPv6 addresses count by
/// their /64 (one machine usually holds a whole /64), IPv4-mapped IPv6 as IPv4.
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[IpAddr]) -> IpAddr {
    let mut client = peer;
    if trusted.contains(&peer)
        && let Some(header) = forwarded_for
    {
        for hop in header.rsplit(',') {
            match hop.trim().parse::<IpAddr>() {
                Ok(ip) if trusted.contains(&ip) => continue,
                Ok(ip) => {
                    client = ip;
                    break;
                }
                // A malformed entry: stop at the last address a trusted hop vouched for.
                Err(_) => break,
            }
        }
    }
    group(client)
}

/// IPv6 to its /64, IPv4-mapped IPv6 to IPv4.
fn group(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_counts_only_from_a_trusted_proxy() {
        let proxy: IpAddr = "10.0.0.2".parse().unwrap();
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        // Straight from the internet: the header is the client's own words, ignored.
        assert_eq!(client_address(peer, Some("1.2.3.4"), &[proxy]), peer);
        // Through the proxy: the right-most address that is not a trusted proxy.
        assert_eq!(
            client_address(proxy, Some("6.6.6.6, 198.51.100.7"), &[proxy]),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_address(proxy, Some("198.51.100.7, 10.0.0.2"), &[proxy]),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        // The proxy without a header, or with garbage: the proxy itself.
        assert_eq!(client_address(proxy, None, &[proxy]), proxy);
        assert_eq!(client_address(proxy, Some("not-an-ip"), &[proxy]), proxy);
    }

    #[test]
    fn ipv6_counts_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_address(a, None, &[]), client_address(b, None, &[]));
        assert_ne!(client_address(a, None, &[]), client_address(c, None, &[]));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(
            client_address(mapped, None, &[]),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn pruning_forgets_full_buckets_only() {
        let limiter = RateLimiter::<&str>::new(0.001, 2.0);
        limiter.check("spent").unwrap();
        limiter.peek("untouched").unwrap();
        assert_eq!(limiter.len(), 2);
        limiter.prune();
        assert_eq!(limiter.len(), 1, "the full bucket is forgotten, the spent one kept");
    }

    #[test]
    fn tokens_are_distinct_and_only_their_hash_is_kept() {
        let (id1, t1) = new_token();
        let (id2, t2) = new_token();
        assert_ne!(t1, t2);
        assert_ne!(id1, id2);
        assert!(t1.starts_with(TOKEN_PREFIX) && t1.len() == TOKEN_PREFIX.len() + 64);
        assert_eq!(hash_token(&t1).len(), 64);
        assert_ne!(hash_token(&t1), hash_token(&t2));
    }

    #[test]
    fn a_burst_is_allowed_then_requests_wait() {
        let start = Instant::now();
        let elapsed = std::sync::Arc::new(Mutex::new(Duration::ZERO));
        let clock = {
            let elapsed = std::sync::Arc::clone(&elapsed);
            Clock::from_fn(move || start + *elapsed.lock().unwrap())
        };
        let limiter = RateLimiter::with_clock(1.0, 3.0, clock);
        assert!((0..3).all(|_| limiter.check(7).is_ok()));
        assert_eq!(limiter.check(7).unwrap_err(), Duration::from_secs(1));
        // Another user has a bucket of their own.
        assert!(limiter.check(8).is_ok());
        // Half a second earns half an event back: not enough; a whole second is.
        *elapsed.lock().unwrap() = Duration::from_millis(500);
        assert_eq!(limiter.check(7).unwrap_err(), Duration::from_millis(500));
        *elapsed.lock().unwrap() = Duration::from_millis(1000);
        assert!(limiter.check(7).is_ok());
        assert!(limiter.check(7).is_err());
    }

    #[test]
    fn peeking_takes_nothing() {
        let limiter = RateLimiter::<&str>::new(0.01, 1.0);
        assert!(limiter.peek("a").is_ok());
        assert!(limiter.peek("a").is_ok());
        assert!(limiter.check("a").is_ok());
        assert!(limiter.peek("a").is_err());
    }
}
