//! What the Chat view holds between turns: its own project handle, the loaded local model,
//! the stop flag, the pending tool approval, the consents given and the API keys. Kept apart
//! from the turn logic (`chat.rs`) so the app's state can own it without importing the chat.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};

use zblade_chat::LocalModel;
use zblade_engine::Project;

use crate::keys::Keys;

/// What the chat holds between turns.
#[derive(Default)]
pub struct ChatState {
    /// The chat's own handle on the open project.
    pub(crate) project: Mutex<Option<Project>>,
    /// The loaded local model (file and window), kept for the next turn.
    pub(crate) local: Mutex<Option<(PathBuf, u32, Arc<LocalModel>)>>,
    /// Set by the stop button.
    pub(crate) stop: Arc<AtomicBool>,
    /// Where the user's answer to the pending tool call goes.
    pub(crate) approval: Mutex<Option<mpsc::Sender<bool>>>,
    /// "Send" answered for a conversation and model this session (`conversation|model id`).
    pub(crate) consented: Mutex<HashSet<String>>,
    /// API keys.
    pub keys: Keys,
}
