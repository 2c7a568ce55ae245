//! `zblade import`: agents' sessions into this project's memory, and `--detect`.

use std::path::Path;

use chrono::Utc;
use zblade_engine::{Error, ImportRequest, parse_time};

use super::Ctx;
use crate::cli::ImportArgs;
use crate::render::{Detection, Imported};

pub(crate) fn run(cx: &mut Ctx, args: ImportArgs) -> Result<(), Error> {
    let mut project = cx.open()?;
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
    let since = args
        .since
        .as_deref()
        .map(|text| parse_time(text, "--since", Utc::now()))
        .transpose()?;
    let request = ImportRequest {
        source,
        paths: args.paths,
        all_projects: args.all_projects,
        since,
        dry_run: args.dry_run,
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
