//! What a scan says about its banding on stderr before it starts: the banding chosen from the
//! threshold (a note, with `-v`), and a poor S-curve (a warning: pairs will be missed).

use crate::config::{Config, MethodConfig};

use super::poor_curve_note;

/// Says on stderr which banding `--threshold` chose and what it means for a pair at the
/// threshold (after the roots are known to be there, so an error comes alone).
pub fn note_banding(cfg: &Config) {
    if let Some(scheme) = cfg.method.containment() {
        cfg.messages.note(&scheme.describe());
        return;
    }
    if let MethodConfig::MinHash {
        banding,
        banding_chosen: true,
        threshold,
        num_perm,
        ..
    } = &cfg.method
    {
        cfg.messages.note(&format!(
            "threshold {threshold}: {} × {} of {num_perm} signature values; a pair at the \
             threshold becomes a candidate with probability {:.4}",
            crate::messages::count(banding.bands as u64, "band"),
            crate::messages::count(banding.rows as u64, "row"),
            banding.candidate_probability(*threshold)
        ));
    }
    if let MethodConfig::MinHash {
        banding, threshold, ..
    } = &cfg.method
    {
        if let Some(note) = poor_curve_note(banding, *threshold) {
            cfg.messages
                .warn(&format!("{note} (see `dupfind explain`)"));
        }
    }
}
