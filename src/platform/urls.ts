/** A URL with its password shown as `***`: for what is printed or recorded of a setting that may hold one. */
export function withoutPassword(url: string): string {
  return url.replace(/\/\/([^@/]*):[^@/]*@/, '//$1:***@');
}
