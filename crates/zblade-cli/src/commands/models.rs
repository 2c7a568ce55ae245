//! `zblade models list|download|import`: embedding models.

use zblade_engine::Error;

use super::Ctx;
use crate::cli::ModelsCommand;

pub(crate) fn run(cx: &mut Ctx, command: ModelsCommand) -> Result<(), Error> {
    match command {
        ModelsCommand::List => {
            let project = cx.open()?;
            cx.out.print(project.list_models().as_slice())
        }
        ModelsCommand::Download {
            name,
            allow_network,
            hub,
            force,
            activate,
        } => {
            let mut project = cx.open()?;
            let mut bar = cx.bar();
            let report =
                project.download_model(&name, &hub, allow_network, force, activate, &mut |file, done, total| {
                    // Bytes shown in KiB so the bar's numbers stay readable.
                    bar.update(file, (done / 1024) as usize, total.map_or(0, |t| (t / 1024) as usize));
                })?;
            bar.finish();
            cx.out.print(&report)
        }
        ModelsCommand::Import {
            dir,
            name,
            force,
            activate,
        } => {
            let mut project = cx.open()?;
            let report = project.import_model(&dir, name.as_deref(), force, activate)?;
            cx.out.print(&report)
        }
    }
}
