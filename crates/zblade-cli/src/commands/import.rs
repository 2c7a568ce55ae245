//! `zblade import`: agents' sessions into this project's memory, and `--detect`.

use std::path::Path;

use chrono::Utc;
use zblade_engine::{Error, ImportRequest, ImportSource, parse_time};

use super::Ctx;
use crate::cli::ImportArgs;
use crate::render::{Detection, Imported, ImportedAll};

pub(crate) fn run(cx: &mut Ctx, args: ImportArgs) -> Result<(), Error> {
    let mut project = cx.open()?;
    if args.all {
        return import_all(cx, project, &args);
    }
    let Some(source) = args.source else {
        return cx.out.print(&Detection {
            sources: &project.sources(),
        });
    };
    if args.follow || args.unfollow {
        project.set_source_enabled(source, args.follow)?;
        let verb = if args.follow {
            "following"
        } else {
            "no longer following"
        };
        cx.notice(&format!(
            "{verb} {source} (zblade watch and the app's tray import its new turns)"
        ));
    }
    let request = ImportRequest {
        paths: args.paths.clone(),
        ..request_for(source, &args)?
    };
    for path in &request.paths {
        if !path.exists() {
            return Err(Error::Usage(format!("{}: no such file or folder", path.display())));
        }
    }
    let mut bar = cx.bar();
    let report = project.import(&request, &mut |done, total, _path: &Path| {
        bar.update("import", done, total)
    })?;
    bar.finish();
    if !request.dry_run {
        super::embed_added(cx, &mut project);
    }
    cx.out.print(&Imported(&report))?;
    if report.nothing_imported() {
        return Err(Error::Usage(format!(
            "nothing could be imported from {source}: {} file(s) failed (see the warnings above)",
            report.files_failed
        )));
    }
    Ok(())
}

/// The request for `source` that the options ask for (no paths: the agent's own store).
fn request_for(source: ImportSource, args: &ImportArgs) -> Result<ImportRequest, Error> {
    let since = args
        .since
        .as_deref()
        .map(|text| parse_time(text, "--since", Utc::now()))
        .transpose()?;
    Ok(ImportRequest {
        source,
        paths: Vec::new(),
        all_projects: args.all_projects,
        since,
        dry_run: args.dry_run,
    })
}

/// `zblade import --all`: every agent whose store holds sessions of this project (every
/// session, with --all-projects), one after the other, one report each. Fails only when there
/// was something to import and none of it could be read.
fn import_all(cx: &mut Ctx, mut project: zblade_engine::Project, args: &ImportArgs) -> Result<(), Error> {
    let sources: Vec<ImportSource> = project
        .sources()
        .into_iter()
        .filter(|s| {
            if args.all_projects {
                s.detected.sessions > 0
            } else {
                s.detected.in_project > 0
            }
        })
        .map(|s| s.detected.source)
        .collect();
    let mut reports = Vec::new();
    for source in sources {
        let request = request_for(source, args)?;
        let mut bar = cx.bar();
        let report = project.import(&request, &mut |done, total, _path: &Path| {
            bar.update(source.as_str(), done, total)
        })?;
        bar.finish();
        reports.push(report);
    }
    if !args.dry_run {
        super::embed_added(cx, &mut project);
    }
    cx.out.print(&ImportedAll(&reports))?;
    if !reports.is_empty() && reports.iter().all(|r| r.nothing_imported()) {
        return Err(Error::Usage(
            "nothing could be imported from any agent (see the warnings above)".into(),
        ));
    }
    Ok(())
}
