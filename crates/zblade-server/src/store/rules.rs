//! The sync server's domain rules, written once for both backends. A backend reads what a
//! rule needs inside its own transaction (so the check and the write see the same rows) and
//! asks the rule here; a rule says the same, in the same words, whichever database holds the
//! project.

use super::{Kind, StoreError, StoreResult};

/// A project's creator is always its owner: they are never invited to it with another role.
pub(crate) fn creator_keeps_ownership(member_id: i64, owner: i64, member: &str, project: &str) -> StoreResult<()> {
    if member_id == owner {
        return Err(StoreError::Conflict(format!(
            "{member} created project {project}; the creator is always its owner"
        )));
    }
    Ok(())
}

/// A project's creator cannot be removed from it: deleting the project is how it ends.
pub(crate) fn creator_stays(member_id: i64, owner: i64, member: &str, project: &str) -> StoreResult<()> {
    if member_id == owner {
        return Err(StoreError::Conflict(format!(
            "{member} created project {project} and cannot be removed from it; delete the project instead"
        )));
    }
    Ok(())
}

/// A writer changes only what they wrote: the refusal when a record of another member's would
/// be replaced.
pub(crate) fn not_their_record_to_change(kind: Kind, id: &str) -> StoreError {
    StoreError::Forbidden(format!(
        "{} {id} was written by another member; a writer changes only what they wrote",
        kind.as_str()
    ))
}

/// A writer deletes only what they wrote: `wrote` is the record's author, when it exists.
pub(crate) fn writer_deletes_own(kind: Kind, id: &str, wrote: Option<i64>, author: i64) -> StoreResult<()> {
    if wrote.is_some_and(|wrote| wrote != author) {
        return Err(StoreError::Forbidden(format!(
            "{} {id} was written by another member; a writer deletes only what they wrote",
            kind.as_str()
        )));
    }
    Ok(())
}

/// User names are unique: the refusal of a second user with a taken name.
pub(crate) fn name_taken(name: &str) -> StoreError {
    StoreError::Conflict(format!("a user named {name} exists already"))
}
