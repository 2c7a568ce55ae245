//! `zblade add document`: Markdown, text and PDF files the user wants remembered, stored as
//! conversations whose messages are the document's sections (`metadata.source.tool` =
//! `document`), so search, context and `show` need nothing new. Adding the same file again
//! replaces its sections.

use std::path::Path;

use chrono::Utc;
use serde::Serialize;
use zblade_core::{Conversation, Error, Provenance, Result};

use crate::project::Project;
use crate::storage::AddOutcome;

/// The provenance tool of documents.
pub const DOCUMENT_SOURCE: &str = "document";

/// What adding documents did.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentsAdded {
    /// One per file, in order.
    pub added: Vec<AddOutcome>,
    /// Secrets replaced by `[REDACTED:…]` before anything was written.
    pub redacted: usize,
}

impl Project {
    /// Reads each file into sections and stores it. Every file is read first: if one cannot
    /// be (missing, unsupported, not a PDF), nothing is written and the error names it.
    pub fn add_documents(&mut self, paths: &[&Path]) -> Result<DocumentsAdded> {
        let mut conversations = Vec::new();
        let mut redacted = 0;
        for path in paths {
            let document = zblade_import::read_document(path).map_err(|e| Error::Usage(e.to_string()))?;
            redacted += document.redacted;
            let mut conversation: Conversation = serde_json::from_str("{}").expect("an empty conversation parses");
            conversation.conversation_id = document.id;
            conversation.title = document.title;
            conversation.created_at = document.modified;
            conversation.updated_at = document.modified;
            conversation.messages = document.sections;
            conversation.metadata.source = Some(Provenance {
                tool: DOCUMENT_SOURCE.to_string(),
                file: path
                    .canonicalize()
                    .unwrap_or_else(|_| path.to_path_buf())
                    .display()
                    .to_string(),
                session_id: String::new(),
                imported_at: Utc::now(),
                extra: Default::default(),
            });
            conversations.push((conversation, path.display().to_string()));
        }
        let added = self.add_conversations(conversations)?;
        Ok(DocumentsAdded { added, redacted })
    }
}
