//! `zblade compressor status|list|import|download|use`: the local GGUF compressor model.

use zblade_engine::Error;

use super::Ctx;
use crate::cli::CompressorCommand;

pub(crate) fn run(cx: &mut Ctx, command: CompressorCommand) -> Result<(), Error> {
    match command {
        CompressorCommand::Status => {
            let project = cx.open()?;
            cx.out.print(&project.compressor_status())
        }
        CompressorCommand::List => {
            let project = cx.open()?;
            cx.out.print(project.compressor_models().as_slice())
        }
        CompressorCommand::Import {
            file,
            name,
            force,
            activate,
        } => {
            let mut project = cx.open()?;
            let report = project.import_compressor_model(&file, name.as_deref(), force, activate)?;
            cx.out.print(&report)
        }
        CompressorCommand::Download {
            url,
            sha256,
            name,
            allow_network,
            force,
            activate,
        } => {
            let mut project = cx.open()?;
            let mut bar = cx.bar();
            let label = url.rsplit('/').next().unwrap_or(&url).to_string();
            let report = project.download_compressor_model(
                &url,
                sha256.as_deref(),
                name.as_deref(),
                allow_network,
                force,
                activate,
                &mut |done, total| {
                    // KiB, so the bar's numbers stay readable.
                    bar.update(&label, (done / 1024) as usize, total.map_or(0, |t| (t / 1024) as usize));
                },
            )?;
            bar.finish();
            cx.out.print(&report)
        }
        CompressorCommand::Use { name } => {
            let mut project = cx.open()?;
            project.use_compressor_model(&name)?;
            if cx.json {
                cx.out
                    .value(&serde_json::json!({"local_model": if name == "none" { "" } else { name.as_str() }}))
            } else if name == "none" {
                cx.out
                    .note("The compressor uses no model now: the extractive compressor does every job.")
            } else {
                cx.out.note(&format!("The compressor uses {name} now."))
            }
        }
    }
}
