// A conversation as the Conversations and Chat views show it: the engine's artifact, each
// message with the code references that belong to it beside it (the command sends them as one
// list, checked now; a fork's inherited messages have theirs under the conversation that wrote
// them, which this matches by message id too).
import type { ConversationDetail, Message, ReferenceReport } from "./bindings";

export type ShownMessage = Message & { id: string; references: ReferenceReport[] };

export type ShownConversation = {
  id: string;
  title: string;
  updated_at: string;
  tags: string[];
  messages: ShownMessage[];
};

export function shownConversation(detail: ConversationDetail): ShownConversation {
  const c = detail.conversation;
  return {
    id: c.conversation_id ?? "",
    title: c.title ?? "",
    updated_at: c.updated_at ?? "",
    tags: c.metadata?.tags ?? [],
    messages: (c.messages ?? []).map((m) => ({
      ...m,
      id: m.id ?? "",
      references: detail.references.filter((r) => r.message_id === m.id),
    })),
  };
}
