// Package render turns a notification's purpose, locale and params into the SMS body, and
// refuses a body that does not fit the SMS segment budget.
//
// There is one template per purpose and locale: password_reset (a reset_url variant and a code
// variant), one_time_code and magic_link, in English ("en"), German ("de") and Brazilian
// Portuguese ("pt-BR"). A locale is resolved in three steps: the exact tag; else a supported
// locale with the same language ("de-AT" → "de", "pt-PT" and "pt" → "pt-BR", "en-GB" → "en");
// else English. The fixed text of every template uses only GSM-7 characters (German umlauts
// and ß are in GSM-7; the Portuguese text is written without ã, ç, ê, ó, as Brazilian SMS
// commonly is), so a message only switches to UCS-2, and loses more than half of its room,
// when a param itself holds a character outside GSM-7.
//
// The budget is counted as the network counts it: GSM-7 in septets (an extension-table
// character such as € or [ costs two), 160 in one segment or 153 per segment of a concatenated
// message; UCS-2 in UTF-16 code units, 70 in one segment or 67 per segment. A body longer than
// the configured number of segments is refused with ErrTooLong at render time, never
// truncated: a truncated reset link is worse than none.
//
// A rendered body holds the secret (a reset URL, a code or a link). Message redacts it when
// printed or logged, and no error of this package contains a param or a body.
package render
