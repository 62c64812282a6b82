//! The JSON-lines form of a matching game, for scripts.

use serde_json::json;
use shakmaty::EnPassantMode;
use shakmaty::fen::Fen;

use super::{GameMatch, SortValue};
use crate::runtime::layout::chess::chess_of;
use crate::runtime::store::Store;

/// One JSON object (one line) for a matching game: game number (1-based),
/// each matching position with its ply and FEN, comments, messages and sort
/// keys.
///
/// # Errors
/// The game's positions cannot be read from the store.
pub fn match_json(
    store: &Store,
    m: &GameMatch,
) -> Result<String, crate::runtime::store::StoreError> {
    let positions = store.game_positions(m.game)?;
    let matches: Vec<_> = m
        .positions
        .iter()
        .filter_map(|&i| positions.get(i as usize).map(|p| (i, p)))
        .map(|(i, p)| {
            let fen = chess_of(p)
                .map(|pos| Fen::from_position(&pos, EnPassantMode::Legal).to_string())
                .unwrap_or_default();
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
