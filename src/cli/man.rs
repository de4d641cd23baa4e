//! `dupfind man [COMMAND]`: a man page (roff) from the same definitions as `--help`. clap_mangen
//! writes the NAME, SYNOPSIS, DESCRIPTION, options (one section per help heading) and
//! SUBCOMMANDS sections; EXIT STATUS, ENVIRONMENT and EXAMPLES (and, for scan, NOTES) come from
//! the tables in [`super::help`], written with roff's escaping.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_mangen::roff::{bold, roman, Roff};

use super::help::{ENVIRONMENT, EXIT_STATUS, OTHER_EXAMPLES, SCAN_EXAMPLES, SCAN_NOTES};
use super::Cli;

/// What roff (through clap_mangen) writes before each part it renders: the apostrophe's
/// definition, needed once per page.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// Writes the page of `command` (None: the overview page of `dupfind`).
pub fn render(command: Option<&str>, out: &mut impl Write) -> Result<()> {
    let mut page = Vec::new();
    render_parts(command, &mut page)?;
    let page = String::from_utf8(page)?;
    // The parts are rendered one by one, each with the preamble: keep the first.
    let body = page.strip_prefix(PREAMBLE).unwrap_or(&page);
    out.write_all(PREAMBLE.as_bytes())?;
    out.write_all(body.replace(PREAMBLE, "").as_bytes())?;
    Ok(())
}

fn render_parts(command: Option<&str>, out: &mut Vec<u8>) -> Result<()> {
    let top = Cli::command();
    let (page, examples): (clap::Command, Vec<(&str, &str)>) = match command {
        None => (
            top,
            SCAN_EXAMPLES[..3]
                .iter()
                .chain(OTHER_EXAMPLES)
                .copied()
                .collect(),
        ),
        Some(name) => {
            let sub = top
                .find_subcommand(name)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no subcommand {name:?}; try `dupfind --help`"))?;
            // Named like git's pages: dupfind-scan(1).
            let page = format!("dupfind-{}", sub.get_name());
            let invoked = format!("dupfind {}", sub.get_name());
            let examples = if sub.get_name() == "scan" {
                SCAN_EXAMPLES.to_vec()
            } else {
                Vec::new()
            };
            let sub = sub
                .display_name(page)
                .bin_name(invoked)
                .version(env!("CARGO_PKG_VERSION"));
            (sub, examples)
        }
    };
    let scan = command == Some("scan");
    let man = clap_mangen::Man::new(page.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if page.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if page.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    let mut roff = Roff::new();
    if scan {
        roff.control("SH", ["NOTES"]);
        for (title, text) in SCAN_NOTES {
            roff.control("TP", [] as [&str; 0]);
            roff.text([bold(*title)]);
            roff.text([roman(*text)]);
        }
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_STATUS {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(*code)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in ENVIRONMENT {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(*name)]);
        roff.text([roman(*meaning)]);
    }
    if !examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for (command, what) in examples {
            roff.control("TP", [] as [&str; 0]);
            roff.text([bold(command)]);
            roff.text([roman(what)]);
        }
    }
    roff.to_writer(out)?;
    man.render_version_section(out)?;
    Ok(())
}
