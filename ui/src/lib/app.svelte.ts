// App-wide state, shared by the views: what is open, the indexer, reference health, errors.
import type { AppInfo, IndexerStatus, ProjectInfo, StatusCount, Tier } from "./bindings";
import { messageOf } from "./api";

export type View = "projects" | "chat" | "conversations" | "history" | "moments" | "search" | "context" | "health" | "settings";

export const VIEWS: { id: View; label: string; key: string }[] = [
  { id: "projects", label: "Projects", key: "1" },
  { id: "chat", label: "Chat", key: "9" },
  { id: "conversations", label: "Conversations", key: "2" },
  { id: "history", label: "History", key: "3" },
  { id: "moments", label: "Moments", key: "4" },
  { id: "search", label: "Search", key: "5" },
  { id: "context", label: "Context", key: "6" },
  { id: "health", label: "References", key: "7" },
  { id: "settings", label: "Settings", key: "8" },
];

export type Toast = { id: number; message: string; tone: "error" | "info" };

class AppStore {
  info = $state<AppInfo | null>(null);
  view = $state<View>("projects");
  project = $state<ProjectInfo | null>(null);
  indexer = $state<IndexerStatus>({ state: "idle", stage: null, done: 0, total: 0, message: null });
  health = $state<StatusCount[]>([]);
  toasts = $state<Toast[]>([]);
  paletteOpen = $state(false);
  /** The conversation the Conversations view shows (set by search results too). */
  openConversation = $state<string | null>(null);
  /** A message to scroll to in it. */
  focusMessage = $state<string | null>(null);
  /** The chat the Chat view opens with (set by "Continue in Chat"). */
  openChat = $state<string | null>(null);
  /** What the Context view packs as it opens (a chat turn's "Context receipt"). */
  contextPrefill = $state<{ query: string; tier: Tier; budget: number | null } | null>(null);
  /** Bumped when memory changed, so lists reload. */
  generation = $state(0);
  private nextToast = 1;

  /** Shows an error; errors are never swallowed. */
  error(e: unknown) {
    this.toast(messageOf(e), "error");
  }

  toast(message: string, tone: Toast["tone"] = "info") {
    const id = this.nextToast++;
    this.toasts.push({ id, message, tone });
    setTimeout(() => this.dismiss(id), tone === "error" ? 12000 : 5000);
  }

  dismiss(id: number) {
    this.toasts = this.toasts.filter((t) => t.id !== id);
  }

  go(view: View) {
    this.view = view;
  }

  showConversation(id: string, message: string | null = null) {
    this.openConversation = id;
    this.focusMessage = message;
    this.view = "conversations";
  }
}

export const app = new AppStore();
