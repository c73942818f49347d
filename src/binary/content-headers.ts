/**
 * The headers of served content (docs/rest.md#binary): which types a browser may show inline,
 * the `Content-Disposition`, and the one byte range of a `Range` request.
 */

/**
 * Types shown inline: ones a browser renders without running anything (images but SVG, audio,
 * video, PDF, plain text). Everything else — HTML, SVG, XML, JavaScript, and every type not
 * listed — is served as a download, so a stored file cannot script the server's origin.
 */
const INLINE_TYPES = /^(image\/(png|jpeg|gif|webp|bmp|avif|tiff)|audio\/[\w.+-]+|video\/[\w.+-]+|application\/pdf|text\/plain)$/i;

/** A media type as sent in a header: `type/subtype` with optional parameters, no control characters. */
const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;\s*[\w!#$&^.+-]+=("[^"\r\n]*"|[\w!#$&^.+-]+))*$/;

/** The `Content-Type` to serve: the stored one when it is a well-formed media type. */
export function servedType(contentType: string | undefined): string {
  const type = (contentType ?? '').trim();
  return MEDIA_TYPE.test(type) ? type : 'application/octet-stream';
}

/** `inline` or `attachment` (with the file name when one was given at upload). */
export function disposition(contentType: string, filename: string | undefined): string {
  const essence = contentType.split(';')[0].trim();
  const kind = INLINE_TYPES.test(essence) ? 'inline' : 'attachment';
  if (!filename) return kind;
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * The byte range of a `Range` header for content of `size` bytes: `{ start, end }` (end
 * inclusive), `unsatisfiable`, or undefined when the whole content is to be served (no header,
 * another unit, several ranges, or a header that does not parse — RFC 9110 §14.2 lets a server
 * ignore those).
 */
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
