//! The compressor runtime against a real llama.cpp model: the tiny random-weight GGUF that
//! `scripts/models/build_tiny_gguf.py` writes (scripts/setup.sh puts it at $ZBLADE_TEST_GGUF).
//! Its words are nonsense, so these tests check structure, never wording.

use std::time::Duration;

use zblade_llm::{Compressor, LlmError, Options, Request, Stop, jobs};

fn load() -> Compressor {
    Compressor::load(&zblade_llm::test_model(), &Options::default()).expect("the tiny model loads")
}

#[test]
fn generates_text_and_reports_both_timings() {
    let compressor = load();
    let info = compressor.info();
    assert!(info.parameters > 10_000, "{info:?}");
    assert!(!info.chat_template);
    let generation = compressor
        .generate(Request::new("Summarise.", "The build uses cmake and clang.", 24))
        .unwrap();
    assert_eq!(
        generation.stop,
        Stop::MaxTokens,
        "random weights rarely pick the end token"
    );
    assert_eq!(generation.generated_tokens, 24);
    assert_eq!(
        generation.llama.generated_tokens as usize,
        24 - 1,
        "the last token is not decoded"
    );
    assert!(generation.prompt_tokens > 20, "{}", generation.prompt_tokens);
    assert_eq!(generation.llama.prompt_tokens as usize, generation.prompt_tokens);
    assert!(generation.prompt_ms > 0.0 && generation.llama.prompt_ms > 0.0);
    // Greedy decoding is deterministic: the same job gives the same text.
    let again = compressor
        .generate(Request::new("Summarise.", "The build uses cmake and clang.", 24))
        .unwrap();
    assert_eq!(again.text, generation.text);
    // Byte-level SentencePiece vocabulary: one token per byte, after SentencePiece writes
    // spaces (and a space prefix) as U+2581, three bytes.
    let spm = format!("\u{2581}{}", "abc déf".replace(' ', "\u{2581}"));
    assert_eq!(compressor.count_tokens("abc déf"), spm.len());
}

#[test]
fn grammar_constrained_moments_are_valid_json() {
    let compressor = load();
    let transcript = "user: Should we use JWT or sessions for auth?\n\
                      assistant: Decided: JWT with 15 minute expiry, signed in src/auth.rs.";
    // `max_tokens` already bounds each generation; the time limit is there only to turn a real
    // hang into a failure. A loaded two-core machine once took over 120 s for one of these
    // generations, so the limit is far above any honest run.
    let mut request = jobs::moments_request(transcript, Duration::from_secs(30 * 60));
    let mut found = 0;
    for seed in 0..20 {
        // Sampling with different seeds explores different paths through the grammar.
        request.temperature = 1.0;
        request.seed = seed;
        let generation = compressor.generate(request.clone()).unwrap();
        assert_eq!(
            generation.stop,
            Stop::End,
            "the grammar bounds the answer: {}",
            generation.text
        );
        let value: serde_json::Value =
            serde_json::from_str(&generation.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", generation.text));
        assert!(value["moments"].is_array(), "{value}");
        found += jobs::parse_moments(&generation)
            .expect("the grammar's shape parses")
            .len();
    }
    assert!(found > 0, "some seeds lead the random model into non-empty moments");
}

#[test]
fn cancel_timeout_and_oversized_prompts_are_errors() {
    let compressor = load();
    let mut slow = Request::new("", "x", 200_000);
    let err = compressor.generate(slow.clone()).unwrap_err();
    assert!(matches!(err, LlmError::PromptTooLong { .. }), "{err}");

    slow.max_tokens = 3_000;
    slow.timeout = Duration::from_millis(50);
    let err = compressor.generate(slow.clone()).unwrap_err();
    assert!(matches!(err, LlmError::TimedOut(_)), "{err}");

    // Two jobs queued: cancelling the first frees the worker for the second.
    slow.timeout = Duration::from_secs(60);
    let first = compressor.submit(slow);
    let second = compressor.submit(Request::new("", "hello", 4));
    first.cancel();
    assert!(matches!(first.wait().unwrap_err(), LlmError::Cancelled));
    assert_eq!(second.wait().unwrap().generated_tokens, 4);

    let mut bad = Request::new("", "hello", 4);
    bad.grammar = Some("root ::= (".into());
    assert!(matches!(compressor.generate(bad).unwrap_err(), LlmError::Grammar(_)));
    assert_eq!(
        compressor
            .generate(Request::new("", "still works", 2))
            .unwrap()
            .generated_tokens,
        2
    );
}

#[test]
fn files_that_are_not_models_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "these are notes, not weights").unwrap();
    let err = Compressor::load(&text, &Options::default()).err().unwrap().to_string();
    assert!(err.contains("notes.gguf") && err.contains("not a GGUF"), "{err}");

    // A real header with the tensors cut off: llama.cpp itself refuses it.
    let bytes = std::fs::read(zblade_llm::test_model()).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = Compressor::load(&cut, &Options::default()).err().unwrap().to_string();
    assert!(err.contains("cut.gguf") && err.contains("could not load"), "{err}");
}

#[test]
fn streamed_pieces_add_up_to_the_text_and_earlier_turns_reach_the_prompt() {
    let compressor = load();
    let pieces = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = {
        let pieces = std::sync::Arc::clone(&pieces);
        zblade_llm::TextSink(std::sync::Arc::new(move |piece: &str| {
            pieces.lock().unwrap().push(piece.to_string())
        }))
    };
    let request = Request {
        on_text: Some(sink),
        ..Request::new("Answer.", "Where is the token checked?", 16)
    };
    let generation = compressor.generate(request).unwrap();
    let pieces = pieces.lock().unwrap();
    assert!(pieces.len() > 1, "the answer arrives in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), generation.text, "nothing lost or doubled");

    // Earlier turns are part of the prompt: more prompt tokens than without them.
    let alone = compressor
        .generate(Request::new("Answer.", "And the refresh?", 4))
        .unwrap();
    let with_turns = compressor
        .generate(Request {
            turns: vec![
                ("user".into(), "Where is the token checked?".into()),
                ("assistant".into(), "In src/auth.rs, validate_token.".into()),
            ],
            ..Request::new("Answer.", "And the refresh?", 4)
        })
        .unwrap();
    assert!(
        with_turns.prompt_tokens > alone.prompt_tokens + 10,
        "{} vs {}",
        with_turns.prompt_tokens,
        alone.prompt_tokens
    );
}
