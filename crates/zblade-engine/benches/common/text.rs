//! Synthetic conversation text with a Zipf-distributed vocabulary, seeded and deterministic.

/// Deterministic text that looks like developer conversations: a Zipf-distributed vocabulary
/// of real words, programming terms and made-up identifiers.
pub struct TextGen {
    state: u64,
    pub vocab: Vec<String>,
    cdf: Vec<f64>,
}

const REAL_WORDS: &str = "the of and to a in is it you that he was for on are with as I his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father token refresh jwt cookie session cache redis postgres sqlite index migration schema query latency timeout retry backoff queue worker thread async await future tokio mutex lock deadlock panic error result option trait struct enum impl closure iterator vector hashmap btree serde json yaml toml config env docker kubernetes deploy build release test bench mock fixture assert coverage lint clippy format rustfmt compile linker crate module function method variable constant static lifetime borrow ownership reference pointer heap stack allocation memory leak profiler flamegraph trace span log metric alert dashboard endpoint route handler middleware auth oauth password hash salt encrypt decrypt signature certificate tls https websocket grpc protobuf schema api client server request response header body status payload upload download stream buffer chunk parse serialize validate sanitize escape inject";

impl TextGen {
    pub fn new(seed: u64) -> Self {
        let mut text_gen = TextGen {
            state: seed.wrapping_mul(6364136223846793005).wrapping_add(1),
            vocab: Vec::new(),
            cdf: Vec::new(),
        };
        let mut vocab: Vec<String> = REAL_WORDS.split_whitespace().map(String::from).collect();
        const SYLLABLES: [&str; 24] = [
            "ka", "lo", "mi", "ter", "zan", "por", "vek", "shi", "dra", "nu", "bel", "cor", "fin", "gra", "hul", "jex",
            "qua", "rin", "sol", "tav", "ulm", "wex", "yor", "zig",
        ];
        while vocab.len() < 30_000 {
            let n = 2 + text_gen.below(3);
            let word: String = (0..n).map(|_| SYLLABLES[text_gen.below(SYLLABLES.len())]).collect();
            vocab.push(word);
        }
        let weights: Vec<f64> = (1..=vocab.len()).map(|rank| 1.0 / (rank as f64).powf(1.07)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        text_gen.cdf = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        text_gen.vocab = vocab;
        text_gen
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545F4914F6CDD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn word(&mut self) -> &str {
        let u = self.unit();
        let i = self.cdf.partition_point(|c| *c < u).min(self.vocab.len() - 1);
        &self.vocab[i]
    }

    pub fn text(&mut self, min_chars: usize, max_chars: usize) -> String {
        let target = min_chars + self.below(max_chars - min_chars);
        let mut out = String::with_capacity(target + 16);
        while out.len() < target {
            if !out.is_empty() {
                out.push(if self.below(12) == 0 { '\n' } else { ' ' });
            }
            let w = self.word().to_string();
            out.push_str(&w);
        }
        out
    }

    pub fn conversation(&mut self, i: usize, messages_per_conversation: usize) -> String {
        let messages: Vec<serde_json::Value> = (0..messages_per_conversation)
            .map(|m| {
                let user = m % 2 == 0;
                let content = if user { self.text(40, 400) } else { self.text(200, 3000) };
                serde_json::json!({
                    "id": format!("msg_{m:03}"),
                    "role": if user { "user" } else { "assistant" },
                    "content": content,
                    "timestamp": format!("2026-01-{:02}T{:02}:{:02}:00Z", 1 + i % 28, m / 60 % 24, m % 60),
                })
            })
            .collect();
        let title = self.text(10, 60);
        serde_json::json!({"conversation_id": format!("conv_{i:06}"), "title": title, "messages": messages}).to_string()
    }

    /// A user query: a few keywords, sometimes phrased as a question with stopwords.
    pub fn query(&mut self) -> String {
        let n = 1 + self.below(3);
        let words: Vec<String> = (0..n)
            .map(|_| {
                // Content words: the 100 most frequent words of the corpus play the part of
                // English function words ("but", "some", "out") that nobody searches for.
                let i = 100 + (self.unit().powf(2.0) * 5000.0) as usize;
                self.vocab[i].clone()
            })
            .collect();
        if self.below(3) == 0 {
            format!("how do we handle the {}", words.join(" "))
        } else {
            words.join(" ")
        }
    }
}
