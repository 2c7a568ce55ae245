//! Items of a source file, found in its tree-sitter syntax tree: functions, methods, types,
//! impls, classes and modules, each with its symbol path, signature and the lines where it may
//! be cut; the lines between items (imports, top-level statements) as unnamed pieces.
//!
//! Containers (impls, traits, classes, modules, namespaces) that fit the budget stay one piece;
//! larger ones become their header plus their members, named `Container::member`.

use std::path::Path;

use tree_sitter::{Node, Parser};

use crate::Piece;

/// The languages chunked by syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `.rs`
    Rust,
    /// `.py`, `.pyi`
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`
    JavaScript,
    /// `.ts`, `.mts`, `.cts`
    TypeScript,
    /// `.tsx`
    Tsx,
    /// `.go`
    Go,
    /// `.java`
    Java,
    /// `.c`, `.h`
    C,
    /// `.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, `.hxx`
    Cpp,
    /// `.md`, `.markdown`: cut by heading, without a grammar.
    Markdown,
}

impl Language {
    /// The language of a file, from its extension.
    pub fn of(path: &Path) -> Option<Language> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Language::Cpp,
            "md" | "markdown" => Language::Markdown,
            _ => return None,
        })
    }

    /// What joins the parts of a symbol path in this language.
    pub fn separator(self) -> &'static str {
        match self {
            Language::Rust | Language::Cpp => "::",
            Language::Markdown => " > ",
            _ => ".",
        }
    }

    fn grammar(self) -> Option<tree_sitter::Language> {
        Some(match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Language::Markdown => return None,
        })
    }
}

/// What a node of the tree is to the chunker.
enum Role<'t> {
    /// A named item; `members` is set for containers (their members are items in turn).
    Item {
        name: String,
        /// Where the declaration ends and the body starts (the signature is before).
        body: Option<Node<'t>>,
        /// The node whose named children are the container's members.
        members: Option<Node<'t>>,
        /// Where the declaration starts (after decorators).
        declaration: Node<'t>,
    },
    /// A comment or attribute: belongs to the item after it.
    Leading,
    /// Anything else: code between items.
    Other,
}

/// The pieces of a file, or `None` when no grammar could be loaded.
pub(crate) fn pieces(language: Language, text: &str, lines: &[&str], budget: usize) -> Option<Vec<Piece>> {
    let mut parser = Parser::new();
    parser.set_language(&language.grammar()?).ok()?;
    let tree = parser.parse(text, None)?;
    let mut out = Vec::new();
    let walk = Walk {
        language,
        text,
        lines,
        budget,
    };
    walk.members(tree.root_node(), None, &mut out);
    Some(out)
}

struct Walk<'a> {
    language: Language,
    text: &'a str,
    lines: &'a [&'a str],
    budget: usize,
}

impl Walk<'_> {
    fn last_line(&self, node: Node<'_>) -> usize {
        let end = node.end_position();
        let row = if end.column == 0 && end.row > node.start_position().row {
            end.row - 1
        } else {
            end.row
        };
        row.min(self.lines.len().saturating_sub(1))
    }

    fn size(&self, start: usize, end: usize) -> usize {
        self.lines[start..=end.max(start)].iter().map(|l| l.len() + 1).sum()
    }

    fn text_of(&self, node: Node<'_>) -> &str {
        &self.text[node.byte_range()]
    }

    /// The members of `parent` (the file, or a container's body) as pieces, their symbols
    /// under `prefix`.
    fn members(&self, parent: Node<'_>, prefix: Option<&str>, out: &mut Vec<Piece>) {
        let mut cursor = parent.walk();
        let children: Vec<Node<'_>> = parent.named_children(&mut cursor).collect();
        // Lines of comments and attributes waiting for the item they lead.
        let mut leading: Option<usize> = None;
        // Code between items: (first line, last line, statement starts).
        let mut gap: Option<(usize, usize, Vec<usize>)> = None;
        let flush = |gap: &mut Option<(usize, usize, Vec<usize>)>, out: &mut Vec<Piece>| {
            if let Some((start, end, cuts)) = gap.take() {
                out.push(Piece {
                    start,
                    end,
                    symbol: prefix.map(str::to_string),
                    signature: String::new(),
                    cuts,
                });
            }
        };
        for child in children {
            let start = child.start_position().row;
            let end = self.last_line(child);
            match self.role(child) {
                Role::Leading => {
                    leading.get_or_insert(start);
                }
                Role::Other => {
                    let from = leading.take().unwrap_or(start);
                    match &mut gap {
                        Some((_, gap_end, cuts)) => {
                            *gap_end = end;
                            cuts.push(from);
                        }
                        None => gap = Some((from, end, vec![from])),
                    }
                }
                Role::Item {
                    name,
                    body,
                    members,
                    declaration,
                } => {
                    flush(&mut gap, out);
                    let from = leading.take().unwrap_or(start);
                    let symbol = match prefix {
                        Some(prefix) => format!("{prefix}{}{name}", self.language.separator()),
                        None => name,
                    };
                    let signature = self.signature(declaration, body.or(members));
                    let fits = self.size(from, end) <= self.budget;
                    match members {
                        Some(members) if !fits => {
                            // The container's header (up to its first member) is a piece of
                            // its own; each member is named under it.
                            let mut inner = Vec::new();
                            self.members(members, Some(&symbol), &mut inner);
                            let header_end = inner.first().map_or(end, |p| p.start.saturating_sub(1));
                            if header_end >= from {
                                out.push(Piece {
                                    start: from,
                                    end: header_end,
                                    symbol: Some(symbol.clone()),
                                    signature,
                                    cuts: Vec::new(),
                                });
                            }
                            out.extend(inner);
                        }
                        _ => {
                            let cuts = body.or(members).map(|b| self.starts(b)).unwrap_or_default();
                            out.push(Piece {
                                start: from,
                                end,
                                symbol: Some(symbol),
                                signature,
                                cuts,
                            });
                        }
                    }
                }
            }
        }
        // Comments after the last item belong to no item: they are code between items.
        if let Some(from) = leading {
            let end = self.last_line(parent).max(from);
            match &mut gap {
                Some((_, gap_end, _)) => *gap_end = end,
                None => gap = Some((from, end, vec![from])),
            }
        }
        flush(&mut gap, out);
    }

    /// Lines where the named children of `node` start (where a large body may be cut).
    fn starts(&self, node: Node<'_>) -> Vec<usize> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .map(|c| c.start_position().row)
            .collect()
    }

    /// The declaration from its start to its body, whitespace collapsed, at most 200 chars.
    fn signature(&self, declaration: Node<'_>, body: Option<Node<'_>>) -> String {
        let start = declaration.start_byte();
        let end = match body {
            Some(body) if body.start_byte() > start => body.start_byte(),
            _ => {
                let line_end = self.text[start..].find('\n').map_or(self.text.len(), |i| start + i);
                line_end.min(declaration.end_byte())
            }
        };
        let collapsed = self.text[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let collapsed = collapsed.trim_end_matches(['{', ':', '=', ' ']).to_string();
        match collapsed.char_indices().nth(200) {
            Some((at, _)) => format!("{}…", &collapsed[..at]),
            None => collapsed,
        }
    }

    fn field<'t>(&self, node: Node<'t>, name: &str) -> Option<Node<'t>> {
        node.child_by_field_name(name)
    }

    fn name_field(&self, node: Node<'_>) -> Option<String> {
        self.field(node, "name").map(|n| self.text_of(n).to_string())
    }

    fn role<'t>(&self, node: Node<'t>) -> Role<'t> {
        use Language::*;
        let kind = node.kind();
        if kind.contains("comment") || matches!(kind, "attribute_item" | "decorator") {
            return Role::Leading;
        }
        let item = |name: Option<String>, body: Option<Node<'t>>, members: Option<Node<'t>>| match name {
            Some(name) if !name.is_empty() => Role::Item {
                name,
                body,
                members,
                declaration: node,
            },
            _ => Role::Other,
        };
        let body = self.field(node, "body");
        match (self.language, kind) {
            (Rust, "function_item" | "function_signature_item") => item(self.name_field(node), body, None),
            (
                Rust,
                "struct_item" | "enum_item" | "union_item" | "type_item" | "const_item" | "static_item"
                | "macro_definition",
            ) => item(self.name_field(node), body, None),
            (Rust, "trait_item" | "mod_item") => item(self.name_field(node), None, body),
            (Rust, "impl_item") => {
                let name = self.field(node, "type").map(|t| self.text_of(t).to_string());
                item(name, None, body)
            }
            (Python, "function_definition") => item(self.name_field(node), body, None),
            (Python, "class_definition") => item(self.name_field(node), None, body),
            (Python, "decorated_definition") => self.wrapped(node, "definition"),
            (
                JavaScript | TypeScript | Tsx,
                "function_declaration" | "generator_function_declaration" | "method_definition" | "function_signature",
            ) => item(self.name_field(node), body, None),
            (
                JavaScript | TypeScript | Tsx,
                "interface_declaration" | "type_alias_declaration" | "enum_declaration",
            ) => item(self.name_field(node), body, None),
            (JavaScript | TypeScript | Tsx, "class_declaration" | "abstract_class_declaration" | "class") => {
                item(self.name_field(node), None, body)
            }
            (JavaScript | TypeScript | Tsx, "module" | "internal_module") => item(self.name_field(node), None, body),
            (JavaScript | TypeScript | Tsx, "export_statement") => self.wrapped(node, "declaration"),
            (JavaScript | TypeScript | Tsx, "lexical_declaration" | "variable_declaration") => {
                self.function_variable(node)
            }
            (Go, "function_declaration") => item(self.name_field(node), body, None),
            (Go, "method_declaration") => {
                let name = self.name_field(node).map(|method| match self.go_receiver(node) {
                    Some(receiver) => format!("{receiver}.{method}"),
                    None => method,
                });
                item(name, body, None)
            }
            (Go, "type_declaration") => {
                let mut cursor = node.walk();
                let spec = node.named_children(&mut cursor).find(|c| c.kind() == "type_spec");
                let name = spec.and_then(|s| self.name_field(s));
                item(name, None, None)
            }
            (Java, "method_declaration" | "constructor_declaration" | "compact_constructor_declaration") => {
                item(self.name_field(node), body, None)
            }
            (
                Java,
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration",
            ) => item(self.name_field(node), None, body),
            (C | Cpp, "function_definition") => item(self.declarator_name(node), body, None),
            (C | Cpp, "struct_specifier" | "union_specifier" | "enum_specifier") => {
                item(self.name_field(node), None, None)
            }
            (C | Cpp, "type_definition") => item(self.declarator_name(node), None, None),
            (Cpp, "class_specifier") => item(self.name_field(node), None, body),
            (Cpp, "namespace_definition") => {
                let name = self.name_field(node).or_else(|| Some("(anonymous)".to_string()));
                item(name, None, body)
            }
            (Cpp, "template_declaration") => {
                let mut cursor = node.walk();
                let inner = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind() != "template_parameter_list")
                    .last();
                match inner.map(|inner| self.role(inner)) {
                    Some(Role::Item {
                        name, body, members, ..
                    }) => Role::Item {
                        name,
                        body,
                        members,
                        declaration: node,
                    },
                    _ => Role::Other,
                }
            }
            _ => Role::Other,
        }
    }

    /// An item inside a wrapper (`export …`, a decorated Python definition), spanning the
    /// wrapper.
    fn wrapped<'t>(&self, node: Node<'t>, field: &str) -> Role<'t> {
        let Some(inner) = self.field(node, field) else {
            return Role::Other;
        };
        match self.role(inner) {
            Role::Item {
                name,
                body,
                members,
                declaration,
            } => Role::Item {
                name,
                body,
                members,
                // A decorator is not part of the declaration; `export` is.
                declaration: if self.language == Language::Python {
                    declaration
                } else {
                    node
                },
            },
            _ => Role::Other,
        }
    }

    /// `const parse = (…) => {…}` and its kin: an item named by the variable when its value is
    /// a function or class; other declarations are code between items.
    fn function_variable<'t>(&self, node: Node<'t>) -> Role<'t> {
        let mut cursor = node.walk();
        let declarator = node
            .named_children(&mut cursor)
            .find(|c| c.kind() == "variable_declarator");
        let Some(declarator) = declarator else {
            return Role::Other;
        };
        let value = self.field(declarator, "value");
        let is_function = value.is_some_and(|v| {
            matches!(
                v.kind(),
                "arrow_function" | "function_expression" | "function" | "generator_function" | "class"
            )
        });
        match (is_function, self.name_field(declarator)) {
            (true, Some(name)) => Role::Item {
                name,
                body: value.and_then(|v| self.field(v, "body")),
                members: None,
                declaration: node,
            },
            _ => Role::Other,
        }
    }

    /// The receiver type of a Go method: `func (s *Server) Start()` → `Server`.
    fn go_receiver(&self, node: Node<'_>) -> Option<String> {
        let receiver = self.field(node, "receiver")?;
        let mut stack = vec![receiver];
        while let Some(n) = stack.pop() {
            if n.kind() == "type_identifier" {
                return Some(self.text_of(n).to_string());
            }
            let mut cursor = n.walk();
            let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
        None
    }

    /// The declared name of a C/C++ function or typedef: the innermost declarator
    /// (`Foo::bar`, `operator==`, `~Foo`).
    fn declarator_name(&self, node: Node<'_>) -> Option<String> {
        let mut current = self.field(node, "declarator")?;
        while let Some(inner) = self.field(current, "declarator") {
            current = inner;
        }
        let text = self.text_of(current);
        let name = text.split('(').next().unwrap_or(text).trim();
        (!name.is_empty()).then(|| name.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}
