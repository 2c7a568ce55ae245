//! fastembed alone, with nothing of zblade in between: the raw baseline the embedding
//! benchmarks (semantic, indexing) measure zblade against. Kept out of `common/mod.rs`,
//! which zblade-cli's MCP benchmark includes without depending on fastembed.

use std::path::Path;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

/// The sentence-transformers model in `dir`, loaded as zblade loads it (ONNX Runtime found by
/// zblade's one lookup, mean pooling, the model's `max_seq_length`) and warmed up.
pub fn load(dir: &Path) -> TextEmbedding {
    zblade_search::embed::load_onnx_runtime().expect("ONNX Runtime loads (zblade's lookup)");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let files = TokenizerFiles {
        tokenizer_file: read("tokenizer.json"),
        config_file: read("config.json"),
        special_tokens_map_file: read("special_tokens_map.json"),
        tokenizer_config_file: read("tokenizer_config.json"),
    };
    let config: serde_json::Value = serde_json::from_slice(&read("sentence_bert_config.json")).unwrap();
    let max_length = config["max_seq_length"].as_u64().unwrap() as usize;
    let model = UserDefinedEmbeddingModel::new(read("model.onnx"), files).with_pooling(Pooling::Mean);
    let mut model =
        TextEmbedding::try_new_from_user_defined(model, InitOptionsUserDefined::new().with_max_length(max_length))
            .unwrap();
    model.embed(["warm up"], None).unwrap();
    model
}
