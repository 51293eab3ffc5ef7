import { defineConfig } from "prisma/config";

// Only `prisma generate` is used; migrations are applied in-process (src/db/migrate.ts).
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
});
