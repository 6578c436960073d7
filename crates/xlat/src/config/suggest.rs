//! "Did you mean" for misspelt names: the closest known name by edit distance, if close.

/// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The known name closest to `name`, if a third of its length or two edits away at most (so
/// that a typo finds its name and an unrelated word finds none).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// "; did you mean `x`?" for the closest known name, or nothing.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known).map_or_else(String::new, |k| format!("; did you mean `{k}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_none() {
        assert_eq!(edit_distance("utopai", "utopia"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let presets = ["utopia", "utopia-ech", "rmm", "baseline-radix"];
        assert_eq!(closest("utopai", presets), Some("utopia"));
        assert_eq!(closest("baseline-radx", presets), Some("baseline-radix"));
        assert_eq!(closest("rm", presets), Some("rmm"));
        assert_eq!(closest("mosaic", presets), None);
        assert_eq!(
            did_you_mean("gupz", ["gups", "stream"]),
            "; did you mean `gups`?"
        );
        assert_eq!(did_you_mean("nothing-like", ["gups"]), "");
    }
}
