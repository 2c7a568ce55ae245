//! Arweave as an archive backend, through a gateway (arweave.net, an ar.io gateway, or
//! arlocal on this machine for tests).
//!
//! Each object is one format-2 transaction signed with the user's wallet, its data the sealed
//! bytes, its tags the envelope (seed 7.1's scheme with zblade's names; nothing about the
//! content): `App-Name: zblade`, `Content-Type: application/octet-stream`,
//! `Zb-Schema: 1`, `Zb-Archive`, `Zb-Kind`, `Zb-Object`, `Zb-Seq`, and for grants
//! `Zb-Grant-To` (the recipient key's fingerprint). The archive finds its objects again
//! through the gateway's GraphQL (owner + tags), and counts confirmations with
//! `/tx/{id}/status`.
//!
//! Every request has a timeout and is retried with exponential backoff when the gateway is
//! unreachable, overloaded (429) or failing (5xx); after the last try the error says the
//! gateway is offline. Answers are size-capped and checked before use.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use zblade_core::{Error, Result};

use super::arweave_tx::{Transaction, Wallet, sign, unb64};
use super::{Backend, Listed, Prepared, envelope_from};
use crate::format::{Envelope, Kind};

/// The app name on every transaction.
pub const APP_NAME: &str = "zblade";
/// Largest object sent inline with its transaction. Larger data would need the chunk upload
/// (`POST /chunk`), which this version does not do; pushes split batches below it.
pub const MAX_INLINE: usize = 10 * 1024 * 1024;
/// Largest answer read from a gateway.
const MAX_ANSWER: u64 = 64 * 1024 * 1024;

/// How hard to try a gateway.
#[derive(Debug, Clone)]
pub struct Retry {
    /// Attempts in all.
    pub attempts: u32,
    /// Wait before the first retry; doubled each time.
    pub first_wait: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 5,
            first_wait: Duration::from_millis(500),
        }
    }
}

/// Arweave through one gateway.
pub struct ArweaveBackend {
    gateway: String,
    owner: String,
    wallet: Option<Wallet>,
    client: Client,
    retry: Retry,
}

impl ArweaveBackend {
    /// A backend reading `owner`'s transactions from `gateway`; `wallet` is needed to write.
    pub fn new(gateway: &str, owner: &str, wallet: Option<Wallet>, retry: Retry) -> Result<ArweaveBackend> {
        let url = reqwest::Url::parse(gateway)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| Error::Usage(format!("{gateway:?} is not a gateway URL (like https://arweave.net)")))?;
        if let Some(wallet) = &wallet
            && wallet.address() != owner
        {
            return Err(Error::Usage(format!(
                "the wallet's address is {}, but this archive belongs to {owner}",
                wallet.address()
            )));
        }
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| Error::Network(format!("building the HTTP client: {e}")))?;
        Ok(ArweaveBackend {
            gateway: url.as_str().trim_end_matches('/').to_string(),
            owner: owner.to_string(),
            wallet,
            client,
            retry,
        })
    }

    /// Sends one request, retrying what is worth retrying. `Ok` carries any answer that is
    /// not a retryable failure; the caller reads its status.
    fn request(&self, what: &str, build: &dyn Fn(&Client) -> reqwest::blocking::RequestBuilder) -> Result<Response> {
        let mut wait = self.retry.first_wait;
        let mut last = String::new();
        for attempt in 1..=self.retry.attempts.max(1) {
            match build(&self.client).send() {
                Ok(response)
                    if response.status().is_server_error() || response.status() == StatusCode::TOO_MANY_REQUESTS =>
                {
                    last = format!("{} answered {}", self.gateway, response.status());
                }
                Ok(response) => return Ok(response),
                Err(e) => last = format!("{}: {e}", self.gateway),
            }
            if attempt < self.retry.attempts {
                std::thread::sleep(wait);
                wait *= 2;
            }
        }
        Err(Error::Network(format!(
            "the Arweave gateway is offline or failing ({what}, {} tries): {last}. Nothing was lost: \
             `zblade archive push` sends what is pending when it is back",
            self.retry.attempts
        )))
    }

    fn get_text(&self, path: &str) -> Result<(StatusCode, String)> {
        let url = format!("{}{path}", self.gateway);
        let response = self.request(path, &|c| c.get(&url))?;
        let status = response.status();
        Ok((
            status,
            read_capped(response, 1024 * 1024)?
                .into_iter()
                .map(char::from)
                .collect(),
        ))
    }

    fn graphql(&self, tags: &[(&str, &str)], owners: bool, after: Option<&str>) -> Result<Value> {
        let tag_filter: Vec<Value> = tags.iter().map(|(n, v)| json!({"name": n, "values": [v]})).collect();
        let query = "query($owners: [String!], $tags: [TagFilter!], $after: String) { \
            transactions(owners: $owners, tags: $tags, first: 100, after: $after, sort: HEIGHT_ASC) { \
            pageInfo { hasNextPage } edges { cursor node { id tags { name value } block { height } } } } }";
        let body = json!({
            "query": query,
            "variables": {"owners": if owners { json!([self.owner]) } else { Value::Null }, "tags": tag_filter, "after": after},
        });
        let url = format!("{}/graphql", self.gateway);
        let bytes = serde_json::to_vec(&body).expect("json");
        let response = self.request("GraphQL", &|c| {
            c.post(&url)
                .header("content-type", "application/json")
                .body(bytes.clone())
        })?;
        let status = response.status();
        let text = read_capped(response, 16 * 1024 * 1024)?;
        if !status.is_success() {
            return Err(Error::Network(format!(
                "the gateway's GraphQL answered {status}: {}",
                String::from_utf8_lossy(&text[..text.len().min(300)])
            )));
        }
        serde_json::from_slice(&text).map_err(|e| Error::Untrusted(format!("the gateway's GraphQL answer: {e}")))
    }

    /// Every transaction matching `tags` (and this owner, when `owners`), in pages.
    fn search(&self, tags: &[(&str, &str)], owners: bool) -> Result<Vec<Found>> {
        let mut out = Vec::new();
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut after: Option<String> = None;
        for _page in 0..100_000 {
            let answer = self.graphql(tags, owners, after.as_deref())?;
            let transactions = &answer["data"]["transactions"];
            let edges = transactions["edges"].as_array().ok_or_else(|| {
                Error::Untrusted(format!("the gateway's GraphQL answer has no transactions: {answer}"))
            })?;
            for edge in edges {
                let node = &edge["node"];
                let Some(id) = node["id"].as_str().filter(|id| is_tx_id(id)) else {
                    continue;
                };
                // A transaction listed twice (a gateway's paging) is one transaction.
                if !seen.insert(id.to_string()) {
                    continue;
                }
                let tags = node["tags"]
                    .as_array()
                    .map(|tags| {
                        tags.iter()
                            .filter_map(|t| Some((t["name"].as_str()?.to_string(), t["value"].as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push((id.to_string(), tags, node["block"]["height"].as_u64()));
            }
            let next = edges.last().and_then(|e| e["cursor"].as_str()).map(str::to_string);
            if transactions["pageInfo"]["hasNextPage"].as_bool() != Some(true) || next.is_none() || next == after {
                return Ok(out);
            }
            after = next;
        }
        Err(Error::Untrusted("the gateway's GraphQL listing never ends".into()))
    }

    /// Signs `sealed` with `tags` under the gateway's current anchor and price.
    fn signed(&self, wallet: &Wallet, sealed: &[u8], tags: &[(&str, &str)]) -> Result<Prepared> {
        let (status, anchor) = self.get_text("/tx_anchor")?;
        if !status.is_success() || !is_tx_id(anchor.trim()) && anchor.trim().len() != 64 {
            return Err(Error::Network(format!(
                "{}/tx_anchor answered {status}: {anchor:.100}",
                self.gateway
            )));
        }
        let (status, reward) = self.get_text(&format!("/price/{}", sealed.len()))?;
        let reward = reward.trim();
        if !status.is_success() || reward.is_empty() || !reward.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::Network(format!(
                "{}/price answered {status}: {reward:.100}",
                self.gateway
            )));
        }
        let tx = sign(wallet, sealed, tags, anchor.trim(), reward)?;
        Ok(Prepared {
            locator: tx.id.clone(),
            payload: serde_json::to_vec(&tx).expect("json"),
        })
    }

    /// The same object as `prepared` (our own transaction, from the journal) signed anew under
    /// a fresh anchor: same data, same tags, a new id.
    fn signed_again(&self, prepared: &Prepared) -> Result<Prepared> {
        let wallet = self.wallet.as_ref().ok_or_else(|| {
            Error::Usage("writing to Arweave needs the wallet: `zblade archive setup --wallet FILE`".into())
        })?;
        let old: Transaction = serde_json::from_slice(&prepared.payload)
            .map_err(|e| Error::Untrusted(format!("journaled transaction {}: {e}", prepared.locator)))?;
        let data = unb64(&old.data, "data")?;
        let text = |b64: &str| {
            String::from_utf8(unb64(b64, "tag")?)
                .map_err(|_| Error::Untrusted(format!("journaled transaction {}: a tag is not text", prepared.locator)))
        };
        let tags = old
            .tags
            .iter()
            .map(|tag| Ok((text(&tag.name)?, text(&tag.value)?)))
            .collect::<Result<Vec<_>>>()?;
        let tags: Vec<(&str, &str)> = tags.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.signed(wallet, &data, &tags)
    }

    /// Posts a signed transaction; an anchor the gateway calls too old is told apart from
    /// other refusals (it is the one a new signature cures).
    fn post(&self, prepared: &Prepared) -> Result<Posted> {
        let url = format!("{}/tx", self.gateway);
        let response = self.request("sending a transaction", &|c| {
            c.post(&url)
                .header("content-type", "application/json")
                .body(prepared.payload.clone())
        })?;
        let status = response.status();
        // Only the start of the answer is read: some gateways echo the whole transaction.
        let body = read_prefix(response, 4096);
        match status.as_u16() {
            // 208 is "transaction already processed": an earlier try got through.
            200..=299 => Ok(Posted::Taken),
            // Arweave nodes answer "Invalid anchor (last_tx)." (and "… from mempool").
            400 if body.to_ascii_lowercase().contains("anchor") => Ok(Posted::StaleAnchor(body)),
            402 | 410 => Err(Error::Usage(format!(
                "the gateway refused transaction {}: the wallet cannot pay for it ({status}). Fund the wallet and run `zblade archive push` again",
                prepared.locator
            ))),
            _ => Err(Error::Network(format!(
                "the gateway refused transaction {} ({status}): {body:.300}",
                prepared.locator
            ))),
        }
    }

    fn height(&self) -> Result<u64> {
        let (status, text) = self.get_text("/info")?;
        if !status.is_success() {
            return Err(Error::Network(format!("{}/info answered {status}", self.gateway)));
        }
        let info: Value =
            serde_json::from_str(&text).map_err(|e| Error::Untrusted(format!("the gateway's /info: {e}")))?;
        info["height"]
            .as_u64()
            .ok_or_else(|| Error::Untrusted("the gateway's /info has no height".into()))
    }

    fn listed(&self, found: Vec<Found>) -> Result<Vec<Listed>> {
        let height = if found.iter().any(|f| f.2.is_some()) {
            Some(self.height()?)
        } else {
            None
        };
        let mut out = Vec::new();
        for (id, tags, block) in found {
            let tag = |name: &str| {
                tags.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or("")
            };
            let Some(envelope) = envelope_from(tag("Zb-Archive"), tag("Zb-Object"), tag("Zb-Kind"), tag("Zb-Seq"))
            else {
                continue;
            };
            out.push(Listed {
                envelope,
                locator: id,
                confirmations: block.zip(height).map(|(b, h)| h.saturating_sub(b) + 1),
            });
        }
        Ok(out)
    }
}

/// What a gateway did with a posted transaction.
enum Posted {
    /// Took it (or had it already).
    Taken,
    /// Refused it because its anchor is too old; the gateway's words.
    StaleAnchor(String),
}

/// A transaction a GraphQL search found: its id, tags and block height (when mined).
type Found = (String, Vec<(String, String)>, Option<u64>);

/// Reads an answer's body, refusing more than `cap` bytes.
fn read_capped(response: Response, cap: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    response
        .take(cap.min(MAX_ANSWER) + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::Network(format!("reading the gateway's answer: {e}")))?;
    if out.len() as u64 > cap {
        return Err(Error::Untrusted(format!("the gateway's answer is over {cap} bytes")));
    }
    Ok(out)
}

/// The first `limit` bytes of an answer, as text (for error messages).
fn read_prefix(response: Response, limit: u64) -> String {
    use std::io::Read;
    let mut out = Vec::new();
    let _ = response.take(limit).read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Transaction ids: 43 base64url characters.
pub fn is_tx_id(text: &str) -> bool {
    text.len() == 43
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Backend for ArweaveBackend {
    fn prepare(&self, envelope: &Envelope, sealed: &[u8], grant_to: Option<&str>) -> Result<Prepared> {
        let wallet = self.wallet.as_ref().ok_or_else(|| {
            Error::Usage("writing to Arweave needs the wallet: `zblade archive setup --wallet FILE`".into())
        })?;
        if sealed.len() > MAX_INLINE {
            return Err(Error::Usage(format!(
                "an archive object of {} bytes is over the {MAX_INLINE} bytes sent inline with a transaction",
                sealed.len()
            )));
        }
        let seq = envelope.seq.to_string();
        let mut tags = vec![
            ("App-Name", APP_NAME),
            ("Content-Type", "application/octet-stream"),
            ("Zb-Schema", "1"),
            ("Zb-Archive", envelope.archive.as_str()),
            ("Zb-Kind", envelope.kind.as_str()),
            ("Zb-Object", envelope.object.as_str()),
            ("Zb-Seq", seq.as_str()),
        ];
        if let (Kind::Grant, Some(fp)) = (envelope.kind, grant_to) {
            tags.push(("Zb-Grant-To", fp));
        }
        self.signed(wallet, sealed, &tags)
    }

    fn submit(&self, prepared: &Prepared) -> Result<()> {
        match self.post(prepared)? {
            Posted::Taken => Ok(()),
            Posted::StaleAnchor(body) => Err(Error::Network(format!(
                "the gateway refused transaction {} as too old ({body:.200}); `zblade archive push` signs it again",
                prepared.locator
            ))),
        }
    }

    fn resend(&self, prepared: &Prepared) -> Result<Option<Prepared>> {
        match self.post(prepared)? {
            Posted::Taken => Ok(None),
            Posted::StaleAnchor(_) => self.signed_again(prepared).map(Some),
        }
    }

    fn list(&self, archive: &str) -> Result<Vec<Listed>> {
        let found = self.search(&[("App-Name", APP_NAME), ("Zb-Archive", archive)], true)?;
        let mut listed = self.listed(found)?;
        listed.retain(|l| l.envelope.kind != Kind::Grant && l.envelope.archive == archive);
        listed.sort_by_key(|l| l.envelope.seq);
        Ok(listed)
    }

    fn list_grants(&self, fingerprint: &str) -> Result<Vec<Listed>> {
        let found = self.search(&[("App-Name", APP_NAME), ("Zb-Grant-To", fingerprint)], false)?;
        let mut listed = self.listed(found)?;
        listed.retain(|l| l.envelope.kind == Kind::Grant);
        Ok(listed)
    }

    fn fetch(&self, locator: &str) -> Result<Vec<u8>> {
        if !is_tx_id(locator) {
            return Err(Error::Untrusted(format!("{locator:?} is not a transaction id")));
        }
        let url = format!("{}/{locator}", self.gateway);
        let response = self.request("fetching data", &|c| c.get(&url))?;
        let status = response.status();
        if !status.is_success() {
            return Err(Error::NotFound(format!(
                "transaction {locator}: the gateway answered {status}"
            )));
        }
        read_capped(response, MAX_INLINE as u64 + 1024)
    }

    fn confirmations(&self, locator: &str) -> Result<Option<u64>> {
        if !is_tx_id(locator) {
            return Err(Error::Untrusted(format!("{locator:?} is not a transaction id")));
        }
        let (status, text) = self.get_text(&format!("/tx/{locator}/status"))?;
        match status.as_u16() {
            // Mined: in a block (arlocal counts the tip block as 0 confirmations, a node as 1).
            200 if text.trim_start().starts_with('{') => {
                let value: Value = serde_json::from_str(&text)
                    .map_err(|e| Error::Untrusted(format!("the gateway's status of {locator}: {e}")))?;
                if value["block_height"].is_null() {
                    return Ok(Some(0));
                }
                Ok(Some(value["number_of_confirmations"].as_u64().unwrap_or(0).max(1)))
            }
            // Known, not yet mined ("Pending").
            200 | 202 => Ok(Some(0)),
            404 => Ok(None),
            _ => Err(Error::Network(format!(
                "{}/tx/{locator}/status answered {status}",
                self.gateway
            ))),
        }
    }

    fn price(&self, bytes: u64) -> Result<Option<String>> {
        let (status, winston) = self.get_text(&format!("/price/{bytes}"))?;
        let winston = winston.trim();
        if !status.is_success() || !winston.bytes().all(|b| b.is_ascii_digit()) || winston.is_empty() {
            return Ok(None);
        }
        let value: u128 = winston.parse().unwrap_or(0);
        Ok(Some(format!(
            "{}.{:012} AR",
            value / 1_000_000_000_000,
            value % 1_000_000_000_000
        )))
    }

    fn describe(&self) -> String {
        format!("Arweave via {} (wallet {})", self.gateway, self.owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_ids_are_checked() {
        assert!(is_tx_id("cdklggsstm0nkme3ori3bgpwpppl47enyby6wszm489"));
        assert!(!is_tx_id("../../etc/passwd"));
        assert!(!is_tx_id("short"));
    }

    #[test]
    fn a_gateway_that_is_not_there_is_reported_offline_after_the_retries() {
        // A port nothing listens on: bind, note the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let retry = Retry {
            attempts: 3,
            first_wait: Duration::from_millis(10),
        };
        let backend = ArweaveBackend::new(&format!("http://127.0.0.1:{port}"), "owner", None, retry).unwrap();
        let error = backend.list(&"a".repeat(32)).unwrap_err().to_string();
        assert!(error.contains("offline") && error.contains("3 tries"), "{error}");
    }
}
