//! What an import reports besides the games it stores: a game skipped with
//! a typed [`SkipReason`], skipped text that is no game, a game imported
//! with a [`GameWarning`], a file without games ([`Report`]).
//!
//! Each type's `Display` is the text `cqlj index` prints; a [`Report`]
//! names the file, the line where the game starts and (for a game) its
//! CQL game number, then the reason.

use super::MAX_GAME_BYTES;
use super::game::{MAX_GAME_POSITIONS, MAX_TAG_BYTES, MAX_TAGS};

/// Why a game, or a stretch of text that is no game, was not imported.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// A `[Variant]` that is neither chess nor Chess960.
    #[error("unsupported variant \"{0}\"")]
    UnsupportedVariant(String),
    /// The Chess960 start position could not be set up.
    #[error("cannot set up the start position: {0}")]
    StartPosition(String),
    /// A tag name over [`MAX_TAG_BYTES`].
    #[error("tag name of {bytes} bytes, more than the limit {MAX_TAG_BYTES}")]
    TagNameTooLong {
        /// Length of the name.
        bytes: usize,
    },
    /// More than `MAX_TAGS` tag pairs.
    #[error("more than {MAX_TAGS} tags")]
    TooManyTags,
    /// A tag value over [`MAX_TAG_BYTES`].
    #[error("tag {name} has a value of {bytes} bytes, more than the limit {MAX_TAG_BYTES}")]
    TagValueTooLong {
        /// The tag's name (lossy UTF-8).
        name: String,
        /// Length of the value.
        bytes: usize,
    },
    /// More than [`MAX_GAME_POSITIONS`] positions.
    #[error("game has more than {MAX_GAME_POSITIONS} positions (u16 ply/parent limit)")]
    TooManyPositions,
    /// Castling rights the store cannot hold (see
    /// `runtime::layout::castling_code`: a Chess960 right to castle with
    /// the fourth rook or more from the board's edge).
    #[error(
        "castling rights at ply {ply} name a rook the store cannot hold (fourth from the edge)"
    )]
    CastlingRights {
        /// Ply of the first position with such rights.
        ply: u32,
    },
    /// A game text over [`MAX_GAME_BYTES`].
    #[error("game text of {bytes} bytes, more than the limit {MAX_GAME_BYTES}")]
    TextTooLong {
        /// Bytes of the game's text.
        bytes: u64,
    },
    /// The PGN reader rejected the text (its message).
    #[error("PGN syntax error: {0}")]
    Syntax(String),
    /// A tag line the PGN reader rejected, and no movetext after it.
    #[error("{UNTERMINATED_TAG}; no move follows")]
    UnterminatedTagNoMove,
    /// The reader ended a game before any position was made.
    #[error("no game")]
    NoGame,
    /// One piece of text with no tag and no legal move (the importer
    /// merges consecutive pieces into one [`SkipReason::NotPgn`]).
    #[error("no tag and no legal move: not PGN text")]
    NotAGame,
    /// A stretch of text with no tag and no legal move: garbage or binary
    /// data, skipped as input without a game number.
    #[error("{bytes} bytes of text that is not PGN (no tag and no legal move)")]
    NotPgn {
        /// Bytes of the stretch (at least 1).
        bytes: u64,
    },
    /// [`super::parse_game`] was given text without a game.
    #[error("no game in the text")]
    NoGameInText,
    /// Reading the text failed ([`super::parse_game`] only: its input is
    /// in memory).
    #[error("{0}")]
    Read(String),
}

impl SkipReason {
    /// Whether the PGN reader rejected a tag line as unterminated (longer
    /// than its buffer): the reader resumes at the next line, and what
    /// follows is the rest of the same game.
    pub fn is_unterminated_tag(&self) -> bool {
        matches!(self, SkipReason::Syntax(m) if m.ends_with("unterminated tag"))
    }
}

/// The text of [`GameWarning::UnterminatedTag`].
const UNTERMINATED_TAG: &str = "a tag line longer than the PGN reader takes (unterminated tag): \
                                the tag is left out, as CQL 6.2 leaves it out";

/// Which line of play a move cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The mainline: CQL 6.2 keeps the game up to the move it cannot read.
    Game,
    /// A variation.
    Variation,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Line::Game => "game",
            Line::Variation => "variation",
        })
    }
}

/// A move that cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadMove {
    /// A null move (`--`, `Z0`) by a side in check.
    Null,
    /// A move that is not legal in its position.
    Illegal {
        /// The move as written (SAN with its suffix).
        san: String,
        /// Why it is not legal.
        error: String,
    },
}

impl std::fmt::Display for BadMove {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadMove::Null => f.write_str("null move by a side in check"),
            BadMove::Illegal { san, error } => write!(f, "illegal move {san} ({error})"),
        }
    }
}

/// Something about a game that did not stop its import.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GameWarning {
    /// A line of play ends at a move that cannot be replayed (the rest of
    /// the line is not stored).
    #[error("{line} cut short: {bad} at ply {ply}")]
    CutShort {
        /// The mainline or a variation.
        line: Line,
        /// The move.
        bad: BadMove,
        /// The move's ply (1-based).
        ply: u32,
    },
    /// A FEN CQL 6.2 does not read: the game starts from the initial
    /// position.
    #[error(
        "FEN \"{fen}\" is not a position CQL 6.2 reads: the game starts from the initial \
         position, as in CQL 6.2"
    )]
    FenIgnored {
        /// The FEN as written (lossy UTF-8, trimmed).
        fen: String,
    },
    /// A FEN CQL 6.2 reads but no move generator plays: the setup is
    /// stored without the moves.
    #[error(
        "FEN \"{fen}\": {error}: the setup is imported, its moves are not replayed (no move \
         generator for it)"
    )]
    FenNotPlayable {
        /// The FEN as written (lossy UTF-8, trimmed).
        fen: String,
        /// Why it cannot be played.
        error: String,
    },
    /// A tag value with a `"` inside, read up to the last `"` of its line.
    #[error(
        "tag {name} holds an unescaped '\"': its value is read up to the last '\"' of the \
         line, as CQL 6.2 reads it"
    )]
    UnescapedQuote {
        /// The tag's name (lossy UTF-8).
        name: String,
    },
    /// A tag line the PGN reader rejected (too long): the tag is left out.
    #[error("{UNTERMINATED_TAG}")]
    UnterminatedTag,
}

/// Where a report points: the input file as given and the 1-based line
/// where the game (or text) starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The input file, as given.
    pub file: String,
    /// 1-based line.
    pub line: u64,
}

/// A skipped game, skipped text, or a warning, as `cqlj index` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// A game that was not imported.
    Skipped {
        /// Where it starts.
        at: Place,
        /// Its CQL game number (1-based) in its file.
        game: u64,
        /// Why.
        reason: SkipReason,
    },
    /// Text that is no game, skipped without a game number.
    SkippedInput {
        /// Where it starts.
        at: Place,
        /// Why.
        reason: SkipReason,
    },
    /// A game imported with a warning.
    Warning {
        /// Where it starts.
        at: Place,
        /// Its CQL game number (1-based) in its file.
        game: u64,
        /// The warning.
        warning: GameWarning,
    },
    /// An input file that holds no game.
    NoGame {
        /// The file, as given.
        file: String,
    },
}

impl Report {
    /// The input file, as given.
    pub fn file(&self) -> &str {
        match self {
            Report::Skipped { at, .. }
            | Report::SkippedInput { at, .. }
            | Report::Warning { at, .. } => &at.file,
            Report::NoGame { file } => file,
        }
    }

    /// The 1-based line the report points at.
    pub fn line(&self) -> u64 {
        match self {
            Report::Skipped { at, .. }
            | Report::SkippedInput { at, .. }
            | Report::Warning { at, .. } => at.line,
            Report::NoGame { .. } => 1,
        }
    }

    /// The CQL game number of the game reported on, if it is a game.
    pub fn game(&self) -> Option<u64> {
        match self {
            Report::Skipped { game, .. } | Report::Warning { game, .. } => Some(*game),
            Report::SkippedInput { .. } | Report::NoGame { .. } => None,
        }
    }

    /// True if input was not imported; false for a warning.
    pub fn is_skipped(&self) -> bool {
        matches!(self, Report::Skipped { .. } | Report::SkippedInput { .. })
    }

    /// The reason or warning alone, without file, line and game.
    pub fn reason(&self) -> String {
        match self {
            Report::Skipped { reason, .. } | Report::SkippedInput { reason, .. } => {
                reason.to_string()
            }
            Report::Warning { warning, .. } => warning.to_string(),
            Report::NoGame { .. } => "the file holds no game".to_owned(),
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (file, line) = (self.file(), self.line());
        let reason = self.reason();
        match self {
            Report::Skipped { game, .. } => {
                write!(f, "{file}:{line}: game {game}: skipped: {reason}")
            }
            Report::SkippedInput { .. } => write!(f, "{file}:{line}: skipped input: {reason}"),
            Report::Warning { game, .. } => {
                write!(f, "{file}:{line}: game {game}: warning: {reason}")
            }
            Report::NoGame { .. } => write!(f, "{file}:{line}: warning input: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64) -> Place {
        Place {
            file: "a.pgn".to_owned(),
            line,
        }
    }

    #[test]
    fn report_text_names_file_line_game_and_reason() {
        let skipped = Report::Skipped {
            at: at(7),
            game: 3,
            reason: SkipReason::TooManyTags,
        };
        assert_eq!(
            skipped.to_string(),
            format!("a.pgn:7: game 3: skipped: more than {MAX_TAGS} tags")
        );
        let input = Report::SkippedInput {
            at: at(1),
            reason: SkipReason::NotPgn { bytes: 300 },
        };
        assert_eq!(
            input.to_string(),
            "a.pgn:1: skipped input: 300 bytes of text that is not PGN (no tag and no legal move)"
        );
        let warning = Report::Warning {
            at: at(5),
            game: 2,
            warning: GameWarning::CutShort {
                line: Line::Variation,
                bad: BadMove::Null,
                ply: 4,
            },
        };
        assert_eq!(
            warning.to_string(),
            "a.pgn:5: game 2: warning: variation cut short: null move by a side in check at ply 4"
        );
        let empty = Report::NoGame {
            file: "a.pgn".to_owned(),
        };
        assert_eq!(
            empty.to_string(),
            "a.pgn:1: warning input: the file holds no game"
        );
        assert_eq!(
            (skipped.game(), input.game(), empty.game()),
            (Some(3), None, None)
        );
        assert!(skipped.is_skipped() && input.is_skipped());
        assert!(!warning.is_skipped() && !empty.is_skipped());
    }

    #[test]
    fn unterminated_tag_texts() {
        assert!(SkipReason::Syntax("unterminated tag".to_owned()).is_unterminated_tag());
        assert!(!SkipReason::Syntax("other".to_owned()).is_unterminated_tag());
        assert_eq!(
            SkipReason::UnterminatedTagNoMove.to_string(),
            format!("{UNTERMINATED_TAG}; no move follows")
        );
        assert_eq!(
            GameWarning::UnterminatedTag.to_string(),
            "a tag line longer than the PGN reader takes (unterminated tag): the tag is left \
             out, as CQL 6.2 leaves it out"
        );
    }
}
