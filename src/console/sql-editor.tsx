/** CodeMirror 6 with DuckDB-flavoured SQL highlighting, as a controlled field. */
import { sql, PostgreSQL } from '@codemirror/lang-sql';
import { EditorView, basicSetup } from 'codemirror';
import { type ReactNode, useEffect, useRef } from 'react';

export function SqlEditor({ value, onChange, label }: { value: string; onChange(value: string): void; label: string }): ReactNode {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    view.current = new EditorView({
      doc: value,
      parent: host.current!,
      extensions: [
        basicSetup,
        sql({ dialect: PostgreSQL, upperCaseKeywords: true }),
        EditorView.contentAttributes.of({ 'aria-label': label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) changed.current(update.state.doc.toString());
        }),
      ],
    });
    return () => view.current?.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // A value set from outside (a template chosen) replaces the text.
  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  return <div className="sql-editor" ref={host} />;
}
