//! The JSON-lines form of a matching game, for scripts.

use serde_json::json;
use shakmaty::fen::{Fen, LossyFenError};
use shakmaty::{Color, EnPassantMode, Position};

use crate::runtime::layout::chess::{chess_of, setup_of};
use crate::runtime::store::Store;
use crate::scan::{GameMatch, SortValue};

/// One JSON object (one line) for a matching game: game number (1-based),
/// each matching position with its ply and FEN, comments, messages and sort
/// keys.
///
/// # Errors
/// The game's positions cannot be read from the store.
pub(crate) fn match_json(
    store: &Store,
    m: &GameMatch,
) -> Result<String, crate::runtime::store::StoreError> {
    let positions = store.game_positions(m.game)?;
    // The record's ply counts from the game's initial position; the FEN's
    // move number continues the setup's (`[FEN]` tag), as a PGN reader would.
    let start_half = store
        .game_tag(m.game, "FEN")?
        .and_then(|f| Fen::from_ascii(f.as_bytes()).ok())
        .map_or(0, |f| {
            let s = f.as_setup();
            (s.fullmoves.get() - 1) * 2 + u32::from(s.turn == Color::Black)
        });
    let matches: Vec<_> = m
        .positions
        .iter()
        .filter_map(|i| positions.get(i as usize).map(|p| (i, p)))
        .map(|(i, p)| {
            // A position shakmaty cannot play (a setup CQL 6.2 reads with
            // the side not to move in check) is written from its record as
            // it stands.
            let mut setup = match chess_of(p) {
                Ok(pos) => pos.to_setup(EnPassantMode::Legal),
                Err(_) => setup_of(p).0,
            };
            let half = start_half + u32::from(p.ply);
            setup.fullmoves = std::num::NonZeroU32::new(half / 2 + 1).unwrap_or(setup.fullmoves);
            let fen = Fen::try_from_setup(setup)
                .unwrap_or_else(LossyFenError::ignore)
                .to_string();
            json!({ "index": i, "ply": p.ply, "fen": fen })
        })
        .collect();
    let sort: Vec<_> = m
        .sort_keys
        .iter()
        .map(|k| {
            let value = match &k.value {
                Some(SortValue::Number(n)) => json!(n),
                Some(SortValue::Text(s)) => json!(s),
                None => serde_json::Value::Null,
            };
            json!({ "label": k.label, "min": k.min, "value": value })
        })
        .collect();
    let comments: Vec<_> = m
        .comments
        .iter()
        .map(|(i, t)| json!({ "index": i, "text": t }))
        .collect();
    Ok(json!({
        "game": u64::from(m.game) + 1,
        "matches": matches,
        "comments": comments,
        "messages": m.messages,
        "sort": sort,
    })
    .to_string())
}
