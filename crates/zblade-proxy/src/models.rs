//! The model table: how much memory a request may carry, from the model it asks for. A model's
//! context window bounds the budget (memory never takes more than an eighth of it), and the
//! tier sets how much of the active conversation a pack keeps. Unknown models get a small,
//! safe budget: a local 8k-token model must not be flooded.

use zblade_engine::ContextTier;

/// What the proxy knows about a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelEntry {
    /// Its context window, in tokens.
    pub context_window: usize,
    /// The most memory one request carries, in tokens.
    pub budget: usize,
    /// How the pack is rendered for it.
    pub tier: ContextTier,
}

/// Matched in order against the model name (lowercased): the first pattern it contains wins.
const TABLE: &[(&str, usize, usize, ContextTier)] = &[
    ("haiku", 200_000, 4_000, ContextTier::Fast),
    ("claude", 200_000, 8_000, ContextTier::Balanced),
    ("nano", 128_000, 2_000, ContextTier::Fast),
    ("mini", 128_000, 4_000, ContextTier::Fast),
    ("gpt-5", 400_000, 8_000, ContextTier::Balanced),
    ("gpt-4.1", 1_000_000, 8_000, ContextTier::Balanced),
    ("gpt-4o", 128_000, 6_000, ContextTier::Balanced),
    ("codex", 400_000, 8_000, ContextTier::Balanced),
    ("o3", 200_000, 8_000, ContextTier::Balanced),
    ("o4", 200_000, 8_000, ContextTier::Balanced),
    ("gemini", 1_000_000, 8_000, ContextTier::Balanced),
    ("deepseek", 128_000, 4_000, ContextTier::Balanced),
    ("qwen", 32_000, 2_000, ContextTier::Fast),
    ("llama", 8_192, 1_000, ContextTier::Fast),
];

/// A model nobody listed: assume a small local one.
pub const UNKNOWN: ModelEntry = ModelEntry {
    context_window: 8_192,
    budget: 1_000,
    tier: ContextTier::Fast,
};

/// The entry for `model`.
pub fn lookup(model: &str) -> ModelEntry {
    let name = model.to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(pattern, ..)| name.contains(pattern))
        .map(|&(_, context_window, budget, tier)| ModelEntry {
            context_window,
            budget: budget.min(context_window / 8),
            tier,
        })
        .unwrap_or(UNKNOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_get_their_entry_and_unknown_ones_a_small_budget() {
        assert_eq!(lookup("claude-sonnet-4-5-20250929").budget, 8_000);
        assert_eq!(lookup("claude-3-5-haiku-latest").tier, ContextTier::Fast);
        assert_eq!(lookup("gpt-4o-mini").budget, 4_000);
        assert_eq!(lookup("my-finetune"), UNKNOWN);
        assert!(lookup("llama-3-8b").budget <= 8_192 / 8);
    }
}
