//! Showing text on one line: labels in receipts and listings, snippets of search hits.

/// `text` on one line (whitespace runs made one space), cut to `max` characters with `…`.
/// Built word by word up to the cut: the text can be a whole long turn, the line is short.
pub fn one_line(text: &str, max: usize) -> String {
    let mut flat = text
        .split_whitespace()
        .flat_map(|word| std::iter::once(' ').chain(word.chars()))
        .skip(1);
    let head: String = flat.by_ref().take(max).collect();
    match flat.next() {
        Some(_) => head
            .chars()
            .take(max.saturating_sub(1))
            .chain(std::iter::once('…'))
            .collect(),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line is the whole text flattened, then cut: whitespace runs as one space, over `max`
    /// characters cut to `max - 1` and "…".
    #[test]
    fn a_line_is_the_flattened_text_cut_at_max_characters() {
        let whole = |text: &str, max: usize| {
            let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if flat.chars().count() > max {
                flat.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
            } else {
                flat
            }
        };
        let samples = [
            String::new(),
            "   \n\t ".into(),
            "one  two\n\nthree".into(),
            "x".repeat(200),
            "x".repeat(201),
            format!("{} {}", "a".repeat(199), "b"),
            format!("{} {}", "a".repeat(198), "b"),
            format!("{}\n\n  {}", "a".repeat(100), "b".repeat(100)),
            "naïve café 数字 🚀 ".repeat(40),
            "word ".repeat(1000),
        ];
        for text in &samples {
            for max in [0, 1, 60, 100, 200] {
                assert_eq!(one_line(text, max), whole(text, max), "{max} {text:?}");
            }
        }
    }
}
