//! Chunks per language, on small sources written the way real ones are.

use std::path::Path;

use super::*;

fn chunks(name: &str, text: &str, budget: usize) -> Vec<SyntaxChunk> {
    chunk(Path::new(name), text, budget).expect("a known language")
}

fn symbols(chunks: &[SyntaxChunk]) -> Vec<String> {
    chunks.iter().flat_map(|c| c.symbols.clone()).collect()
}

/// The chunk holding `symbol`.
fn holding<'a>(chunks: &'a [SyntaxChunk], symbol: &str) -> &'a SyntaxChunk {
    chunks
        .iter()
        .find(|c| c.symbols.iter().any(|s| s == symbol))
        .unwrap_or_else(|| panic!("no chunk holds {symbol}: {chunks:?}"))
}

fn lines_of(text: &str, c: &SyntaxChunk) -> String {
    text.lines()
        .skip(c.start_line as usize - 1)
        .take((c.end_line - c.start_line + 1) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Rust function of about `n` lines.
fn rust_fn(name: &str, n: usize) -> String {
    let body: String = (0..n)
        .map(|i| format!("    let v{i} = compute_{i}(input);\n"))
        .collect();
    format!("/// Does {name}.\n#[inline]\npub fn {name}(input: &str) -> usize {{\n{body}    0\n}}\n")
}

#[test]
fn rust_impl_larger_than_the_budget_becomes_its_methods_named_under_the_type() {
    let text = format!(
        "use std::io;\n\npub struct GitignoreBuilder {{\n    lines: Vec<String>,\n}}\n\nimpl GitignoreBuilder {{\n{}\n{}}}\n",
        rust_fn("add_line", 30).replace('\n', "\n    "),
        rust_fn("build", 30).replace('\n', "\n    ")
    );
    let found = chunks("src/gitignore.rs", &text, 2000);
    let names = symbols(&found);
    assert!(names.contains(&"GitignoreBuilder::add_line".to_string()), "{names:?}");
    assert!(names.contains(&"GitignoreBuilder::build".to_string()), "{names:?}");
    let add = holding(&found, "GitignoreBuilder::add_line");
    assert_eq!(add.signature, "pub fn add_line(input: &str) -> usize");
    let body = lines_of(&text, add);
    assert!(
        body.trim_start().starts_with("/// Does add_line."),
        "doc comment and attribute lead the method: {body}"
    );
    assert!(body.trim_end().ends_with('}'), "{body}");
    assert!(!body.contains("fn build"), "one method per chunk: {body}");
}

#[test]
fn small_items_are_merged_and_a_large_function_is_split_at_its_statements() {
    let text = format!("{}\n{}\n{}", rust_fn("one", 1), rust_fn("two", 1), rust_fn("big", 200));
    let found = chunks("src/lib.rs", &text, 2000);
    assert_eq!(found[0].symbols, ["one", "two"], "small neighbours share a chunk");
    let big: Vec<&SyntaxChunk> = found.iter().filter(|c| c.symbols == ["big"]).collect();
    assert!(big.len() >= 3, "split into several parts: {found:?}");
    for part in &big {
        let body = lines_of(&text, part);
        assert!(body.len() <= 2000, "{}", body.len());
        assert_eq!(part.signature, "pub fn big(input: &str) -> usize");
    }
    for pair in big.windows(2) {
        assert_eq!(pair[1].start_line, pair[0].end_line + 1, "parts follow each other");
        let first_line = text.lines().nth(pair[1].start_line as usize - 1).unwrap();
        assert!(
            first_line.trim_start().starts_with("let "),
            "cut at a statement: {first_line}"
        );
    }
}

#[test]
fn rust_traits_enums_and_modules_are_named() {
    let text = "pub trait Store {\n    fn get(&self) -> u8;\n}\n\npub enum Mode { A, B }\n\nmod inner {\n    pub fn helper() {}\n}\n";
    let found = chunks("src/store.rs", text, 2000);
    assert_eq!(symbols(&found), ["Store", "Mode", "inner"]);
    assert_eq!(found[0].signature, "pub trait Store");
}

#[test]
fn python_classes_methods_and_decorators() {
    let body: String = (0..40).map(|i| format!("        x{i} = self.step({i})\n")).collect();
    let text = format!(
        "import os\n\n\nclass Session:\n    \"\"\"A session.\"\"\"\n\n    @property\n    def token(self) -> str:\n{body}        return x0\n\n    def refresh(self, force: bool = False):\n{body}        return None\n\n\ndef main():\n    pass\n"
    );
    let found = chunks("pkg/auth.py", &text, 2000);
    let names = symbols(&found);
    assert!(names.contains(&"Session.token".to_string()), "{names:?}");
    assert!(names.contains(&"Session.refresh".to_string()), "{names:?}");
    assert!(names.contains(&"main".to_string()), "{names:?}");
    let token = holding(&found, "Session.token");
    assert!(lines_of(&text, token).trim_start().starts_with("@property"));
    assert_eq!(token.signature, "def token(self) -> str");
}

#[test]
fn typescript_exports_arrow_functions_and_classes() {
    let text = "import { x } from './x';\n\nexport function parseConfig(text: string): Config {\n  return JSON.parse(text);\n}\n\nexport const refreshToken = async (t: string) => {\n  return t;\n};\n\nexport interface Config { name: string }\n\nclass Store {\n  get(key: string) { return key; }\n}\n";
    let found = chunks("src/config.ts", text, 100);
    let names = symbols(&found);
    for name in ["parseConfig", "refreshToken", "Config", "Store"] {
        assert!(names.contains(&name.to_string()), "{name} in {names:?}");
    }
    let parse = holding(&found, "parseConfig");
    assert_eq!(parse.signature, "export function parseConfig(text: string): Config");
    assert!(chunk(Path::new("a.tsx"), "export const A = () => <div/>;\n", 2000).is_some());
    assert!(chunk(Path::new("a.js"), "function a() {}\n", 2000).is_some());
}

#[test]
fn go_methods_are_named_by_their_receiver() {
    let text = "package server\n\n// Start starts it.\nfunc (s *Server) Start(port int) error {\n\treturn nil\n}\n\ntype Server struct {\n\tport int\n}\n";
    let found = chunks("server/server.go", text, 200);
    assert_eq!(symbols(&found), ["Server.Start", "Server"]);
    assert_eq!(found[0].signature, "func (s *Server) Start(port int) error");
}

#[test]
fn java_c_and_cpp_items() {
    let java = "package a;\n\npublic class Pool {\n  public Pool(int n) { this.n = n; }\n  public int size() { return n; }\n}\n";
    let found = chunks("src/Pool.java", java, 60);
    assert_eq!(symbols(&found), ["Pool", "Pool.Pool", "Pool.size"]);
    let c = "#include <stdio.h>\n\nstruct point { int x; };\n\nstatic int add(int a, int b) {\n  return a + b;\n}\n";
    assert!(symbols(&chunks("m.c", c, 40)).contains(&"add".to_string()));
    let cpp = "namespace net {\nclass Socket {\n public:\n  void close();\n};\n}\n\nvoid net::Socket::close() {\n  fd = -1;\n}\n";
    let names = symbols(&chunks("s.cpp", cpp, 30));
    assert!(names.contains(&"net::Socket::close".to_string()), "{names:?}");
}

#[test]
fn markdown_is_cut_by_heading_and_fenced_code_is_not_a_heading() {
    let filler = "Some words about it.\n".repeat(60);
    let text =
        format!("Intro line.\n\n# Guide\n\n{filler}\n## Install\n\n```sh\n# not a heading\nmake\n```\n\n{filler}");
    let found = chunks("docs/guide.md", &text, 2000);
    let names = symbols(&found);
    assert!(names.contains(&"Guide > Install".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("not a heading")), "{names:?}");
}

#[test]
fn every_line_of_a_file_is_in_at_most_one_chunk_and_chunks_are_ordered() {
    let text = format!("{}{}{}", rust_fn("a", 5), rust_fn("b", 90), rust_fn("c", 2));
    let found = chunks("src/x.rs", &text, 1500);
    for pair in found.windows(2) {
        assert!(pair[1].start_line > pair[0].end_line, "{found:?}");
    }
    let covered: usize = found.iter().map(|c| (c.end_line - c.start_line + 1) as usize).sum();
    assert!(covered >= text.lines().filter(|l| !l.trim().is_empty()).count() - 1);
}

#[test]
fn other_languages_are_left_to_line_windows_and_broken_code_still_chunks() {
    assert!(chunk(Path::new("a.rb"), "def a; end", 2000).is_none());
    assert!(chunk(Path::new("Makefile"), "all:", 2000).is_none());
    let broken = "fn ok() {}\n\nfn broken( {\n  let x = ;\n";
    let found = chunks("src/b.rs", broken, 2000);
    assert!(!found.is_empty());
    assert_eq!(chunks("src/e.rs", "", 2000), Vec::new());
}

#[test]
fn module_paths_follow_the_languages_conventions() {
    assert_eq!(module_path(Path::new("crates/x/src/net/http.rs")), "net::http");
    assert_eq!(module_path(Path::new("src/lib.rs")), "");
    assert_eq!(module_path(Path::new("src/net/mod.rs")), "net");
    assert_eq!(module_path(Path::new("pkg/util/__init__.py")), "pkg.util");
    assert_eq!(module_path(Path::new("README")), "");
}
