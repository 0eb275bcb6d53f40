import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// A folder's README that lists its files in a table (a `| file |` column; `| folder or file |`
// for its subfolders too) lists every one of them: a file added without its line, or a line left
// behind by a file that moved, fails here.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FOLDERS = ["core", "domain", "api", "indexer", "worker", "scripts"];
const FILE_TABLE = /^\|\s*(?:folder or )?file\s*\|/im;
/** A table of folders too: each subfolder is named as `name/`. */
const FOLDER_TABLE = /^\|\s*folder or file\s*\|/im;

function foldersUnder(folder: string): string[] {
  return [
    folder,
    ...readdirSync(folder).flatMap((name) => {
      const child = path.join(folder, name);
      return statSync(child).isDirectory() ? foldersUnder(child) : [];
    }),
  ];
}

/** The first cells of the rows of the README's file tables. */
function tableRows(readme: string): string[] {
  const cells: string[] = [];
  let inTable = false;
  for (const line of readme.split("\n")) {
    if (FILE_TABLE.test(line)) inTable = true;
    else if (!line.startsWith("|")) inTable = false;
    else if (inTable && !/^\|\s*-/.test(line)) cells.push(line.split("|")[1] ?? "");
  }
  return cells;
}

/** Each README with a file table, the folder's own source files, and the names the README gives in backticks. */
function fileTables() {
  return FOLDERS.flatMap((top) => foldersUnder(path.join(ROOT, top)))
    .filter((folder) => existsSync(path.join(folder, "README.md")))
    .flatMap((folder) => {
      const readme = readFileSync(path.join(folder, "README.md"), "utf8");
      if (!FILE_TABLE.test(readme)) return [];
      // The first column of each file table's rows: `name.ts` (or several, `a.ts`, `b.ts`).
      const named = new Set(tableRows(readme).flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!)));
      const entries = readdirSync(folder);
      const files = [
        ...entries.filter((name) => /\.(ts|mjs|sh)$/.test(name) && statSync(path.join(folder, name)).isFile()),
        ...(FOLDER_TABLE.test(readme)
          ? entries.filter((name) => statSync(path.join(folder, name)).isDirectory()).map((name) => `${name}/`)
          : []),
      ];
      return [{ folder: path.relative(ROOT, folder), files, named }];
    });
}

describe("folder READMEs", () => {
  it("name every file of their folder in their file table", () => {
    const tables = fileTables();
    expect(tables.length).to.be.greaterThan(5);
    const unnamed = tables.flatMap(({ folder, files, named }) =>
      files.filter((file) => !named.has(file)).map((file) => `${folder}/${file}`),
    );
    expect(unnamed).to.deep.equal([]);
  });

  it("name no file their folder does not have", () => {
    const stale = fileTables().flatMap(({ folder, named }) =>
      [...named]
        .filter((name) => /^[\w./-]+(\.(ts|mjs|sh)|\/)$/.test(name) && !existsSync(path.join(ROOT, folder, name)))
        .map((name) => `${folder}: ${name}`),
    );
    expect(stale).to.deep.equal([]);
  });
});
